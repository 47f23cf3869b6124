# The stages' steps in the four-step reference design whose numbers are the defaults (tool-result
# budget, snip, micro-compact, summarize), each restated here independently of Compactor.
import os
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'run_basics.py')).read().split("ms=conv(5,600)")[0])  # helpers only
def r_of(s): return receipt(s)
def BP_MARK(n, r, prev, p): return f"[compactor budget_persist: this tool result ({n} chars) was archived as {r}; restore it with `compactor restore {r}`. Its first {prev} chars follow; the rest is not shown.]\n{p}"
def SNIP_MARK(n, r, tell): return f"[compactor snip: {n} messages archived as {r}]" + (f" `compactor restore {r}` gives them back (JSONL, one message a line), and so for every receipt in a marker." if tell else "")
def ex(i, content, text=None):
    tid=f"toolu_{i:02d}"; a={"role":"assistant","content":([{"type":"text","text":text}] if text else [])+[{"type":"tool_use","id":tid,"name":"Bash","input":{"command":f"step {i}"}}]}
    return [a, {"role":"user","content":[{"type":"tool_result","tool_use_id":tid,"content":content}]}]

# ---- budget_persist: biggest first, until under --------------------------------------------
ms=[{"role":"user","content":"collect the four reports"}]
ids=["toolu_a","toolu_b","toolu_c","toolu_d"]; sizes=[4000,2000,6000,5000]
ms.append({"role":"assistant","content":[{"type":"tool_use","id":t,"name":"Read","input":{"path":f"r{k}.txt"}} for k,t in enumerate(ids)]})
ms.append({"role":"user","content":[{"type":"tool_result","tool_use_id":t,"content":(chr(ord('A')+k)+"0123456789")*(n//11)+chr(ord('A')+k)*(n%11)} for k,(t,n) in enumerate(zip(ids,sizes))]})
out=json.loads(json.dumps(ms)); blocks=out[2]["content"]
total=sum(len(b["content"]) for b in blocks)
order=sorted(range(4), key=lambda k:-len(blocks[k]["content"]))
for k in order:
    if total<=8000: break
    c=blocks[k]["content"]
    if len(c)<=3000: continue
    m=BP_MARK(len(c), r_of(dumps(c)), 100, c[:100]); total=total-len(c)+len(m); blocks[k]["content"]=m
print("bp persisted", [k for k in range(4) if blocks[k]["content"].startswith("[compactor")], "total", total)
raw=[dumps(m) for m in ms]; rawo=[dumps(m) for m in out]
cfg="version: 1\nbudget: {unit: chars, limit: 100000}\npipeline:\n  - stage: budget_persist\n    params: {max_batch_chars: 8000, persist_chars: 3000, preview_chars: 100}\n"
BP=[("max_batch_chars",8000),("persist_chars",3000),("preview_chars",100)]
write("budget_persist_biggest_first","The newest batch (17,000 chars) is over 8,000: its biggest results over 3,000 chars, 6,000 then 5,000, are archived with a 100-char preview until it is under; 4,000 and 2,000 stay.",
      text(ms),cfg,0,text(out),
      report(cfg,None,(100000,100000),sz(raw),sz(rawo),2,[stage("budget_persist","PLUGINS","committed",sz(raw),sz(rawo))],"ok",0,
             resolved(100000,100000,"abort",entry("budget_persist","PLUGINS","always",BP))))

# ---- snip -----------------------------------------------------------------------------------
def snip(ms, max_messages, keep_head, request, tail_exchanges=1):
    n=len(ms)
    def has_use(m): return isinstance(m["content"],list) and any(b["type"]=="tool_use" for b in m["content"])
    def has_res(m): return isinstance(m["content"],list) and any(b["type"]=="tool_result" for b in m["content"])
    def is_marker(m): return m["role"]=="user" and isinstance(m["content"],list) and len(m["content"])==1 and m["content"][0]["type"]=="text" and m["content"][0]["text"].startswith("[compactor snip:")
    head=min(keep_head,n)
    if head>0 and has_use(ms[head-1]):
        while head<n and ms[head]["role"]=="user" and has_res(ms[head]): head+=1
    for i in range(0,min(head+1,n)):
        if is_marker(ms[i]): head=i; break
    tail=n-(max_messages-keep_head)
    assistants=[i for i,m in enumerate(ms) if m["role"]=="assistant"]
    tb=assistants[-tail_exchanges]
    while tb>0 and ms[tb-1]["role"]=="assistant": tb-=1
    tail=min(tail,tb)
    for i in range(head,tail):
        texts=[ms[i]["content"]] if isinstance(ms[i]["content"],str) else [b.get("text","") for b in ms[i]["content"] if b["type"]=="text"]
        if any(request in t for t in texts): tail=min(tail,i); break
    while tail>head:
        m,p=ms[tail],ms[tail-1]
        if (m["role"]=="user" and has_res(m)) or (m["role"]=="assistant" and p["role"]=="assistant") or (m["role"]=="user" and p["role"]=="user" and has_res(p)): tail-=1
        else: break
    jsonl="".join(dumps(m)+"\n" for m in ms[head:tail])
    marker={"role":"user","content":[{"type":"text","text":SNIP_MARK(tail-head, r_of(jsonl), not told_before(ms, head))}]}
    return ms[:head]+[marker]+ms[tail:], head, tail

SNIP=[("keep_head",3),("keep_messages",0),("max_messages",50)]
# cut moved off a pair: 56 exchanges-ish so that n-47 lands on a result
ms=[{"role":"user","content":"migrate every module"}]
for i in range(27): ms+=ex(i, f"module {i} migrated")
ms+=[{"role":"assistant","content":"All modules are migrated."},{"role":"user","content":"run the whole suite"}]
ms+=ex(27, "suite passed", "Running it.")
n=len(ms); print("snip1 n", n, "n-47", n-47, ms[n-47]["role"])
out,h,t=snip(ms,50,3,"run the whole suite")
print("snip1 head/tail", h, t)
cfg="version: 1\nbudget: {unit: chars, limit: 100000}\npipeline:\n  - stage: snip\n"
raw=[dumps(m) for m in ms]; rawo=[dumps(m) for m in out]
write("snip_cut_moved_off_pair",f"{n} messages: the newest 47 would start at a tool_result (messages.{n-47}), so the cut moves back to its tool_use (messages.{t}); the first 3 and one marker precede it.",
      text(ms),cfg,0,text(out),
      report(cfg,None,(100000,100000),sz(raw),sz(rawo),3,[stage("snip","PLUGINS","committed",sz(raw),sz(rawo))],"ok",0,
             resolved(100000,100000,"abort",entry("snip","PLUGINS","always",SNIP))))

# request in the middle is kept
ms=[{"role":"user","content":"set up the project"}]
for i in range(5): ms+=ex(i, f"setup step {i} done")
ms+=[{"role":"assistant","content":"Set up."},{"role":"user","content":"now port the parser to C++ and keep every test green"}]
req_index=len(ms)-1
for i in range(5,35): ms+=ex(i, f"port step {i} ok")
n=len(ms); out,h,t=snip(ms,50,3,"now port the parser to C++ and keep every test green")
print("snip2 n",n,"req",req_index,"head/tail",h,t)
raw=[dumps(m) for m in ms]; rawo=[dumps(m) for m in out]
write("snip_keeps_request",f"{n} messages whose active request (messages.{req_index}) lies in the middle: snip keeps everything from the request on and archives only messages.3 to messages.{req_index-1}.",
      text(ms),cfg,0,text(out),
      report(cfg,None,(100000,100000),sz(raw),sz(rawo),3,[stage("snip","PLUGINS","committed",sz(raw),sz(rawo))],"ok",0,
             resolved(100000,100000,"abort",entry("snip","PLUGINS","always",SNIP))))

# second snip: one marker
ms=[{"role":"user","content":"keep refactoring until the build is clean"}]
for i in range(40): ms+=ex(i, f"refactor pass {i}: 3 warnings left")
first,h1,t1=snip(ms,50,3,"keep refactoring until the build is clean")
second_in=first[:]
for i in range(40,52): second_in+=ex(i, f"refactor pass {i}: 2 warnings left")
out,h,t=snip(second_in,50,3,"keep refactoring until the build is clean")
print("snip3 first", len(first), "second in", len(second_in), "head/tail", h, t, "markers", sum(1 for m in out if m['role']=='user' and isinstance(m['content'],list) and m['content'][0].get('text','').startswith('[compactor snip')))
raw=[dumps(m) for m in second_in]; rawo=[dumps(m) for m in out]
write("second_snip_one_marker","An already snipped history that grew past 50 again is snipped into the same single marker: the old marker is archived with the new middle.",
      text(second_in),cfg,0,text(out),
      report(cfg,None,(100000,100000),sz(raw),sz(rawo),3,[stage("snip","PLUGINS","committed",sz(raw),sz(rawo))],"ok",0,
             resolved(100000,100000,"abort",entry("snip","PLUGINS","always",SNIP))))

# ---- micro keeps 3 and the unseen ------------------------------------------------------------
def micro_unseen(ms, keep):
    last=ms[-1]
    unseen = len(ms)-1 if last["role"]=="user" and any(b["type"]=="tool_result" for b in last["content"]) else len(ms)
    res=[(i,b) for i,m in enumerate(ms) if isinstance(m["content"],list) for b,blk in enumerate(m["content"]) if blk["type"]=="tool_result"]
    res=res[:len(res)-keep] if len(res)>keep else []
    out=json.loads(json.dumps(ms)); changed=set(); first={}
    for i,b in res:
        if i>=unseen: continue
        c=out[i]["content"][b]["content"]
        r=receipt(dumps(c)); m=MARK.format(label=label_of(ms,i,out[i]["content"][b]["tool_use_id"],out[i]["content"][b]), n=len(c), r=r)
        if len(c)<=110 or len(m)>=len(c): continue
        out[i]["content"][b]["content"]=m; changed.add((i,b)); first.setdefault(i,(b,r))
    if changed:
        o=min(i for i,_ in changed)
        if not told_before(ms,o): b,r=first[o]; out[o]["content"][b]["content"]+=TELL.format(r=r)
    return out, changed
ms=[{"role":"user","content":"read all the logs"}]
for i in range(3): ms+=ex(i, chr(ord('p')+i)*800)
batch=[f"toolu_b{k}" for k in range(4)]
ms.append({"role":"assistant","content":[{"type":"tool_use","id":t,"name":"Read","input":{"path":f"{t}.log"}} for t in batch]})
ms.append({"role":"user","content":[{"type":"tool_result","tool_use_id":t,"content":chr(ord('w')+k)*800} for k,t in enumerate(batch)]})
out,ch=micro_unseen(ms, 3)
print("micro unseen changed", sorted(ch))
raw=[dumps(m) for m in ms]; rawo=[dumps(m) for m in out]
cfg="version: 1\nbudget: {unit: chars, limit: 1000}\nrecent: {exchanges: 0}\npipeline:\n  - stage: micro\n    when: over_budget\n"
MICRO3=[("edit_tools",'"Edit MultiEdit NotebookEdit apply_patch replace edit"'),("keep_recent",3),("min_chars",110),("never",'""'),("order",'"newest"'),("until",'"all"')]
res=resolved(1000,1000,"abort",entry("micro","PLUGINS","over_budget",MICRO3)).replace("exchanges: 1","exchanges: 0")
write("micro_keeps_three_and_unseen","Three older 800-char results and a final batch of four the model has not seen, no protected tail: keep_recent 3 alone would take the fourth-newest, but unseen results stay whole; the three older become receipt markers.",
      text(ms),cfg,1,text(out),
      report(cfg,None,(1000,1000),sz(raw),sz(rawo),2,[stage("micro","PLUGINS","committed",sz(raw),sz(rawo))],"over_budget",1,res))
