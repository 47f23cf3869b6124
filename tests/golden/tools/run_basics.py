import os
import json, os
G=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'run')
def dumps(m): return json.dumps(m, ensure_ascii=False, separators=(',',':'))
def conv(n=5, size=300):
    ms=[{"role":"user","content":"summarize the build logs"}]
    for i in range(n):
        tid=f"toolu_{i:02d}"
        ms.append({"role":"assistant","content":[{"type":"text","text":f"Reading log {i}."},{"type":"tool_use","id":tid,"name":"Read","input":{"path":f"logs/{i}.txt"}}]})
        ms.append({"role":"user","content":[{"type":"tool_result","tool_use_id":tid,"content":chr(ord('a')+i)*size}]})
    ms.append({"role":"assistant","content":[{"type":"text","text":"All five logs show the same linker error."}]})
    ms.append({"role":"user","content":"thanks, now fix it"})
    return ms
def text(ms): return "[\n"+",\n".join(dumps(m) for m in ms)+"\n]\n"
def chars(s): return len(s)
def size(ms_raw): return sum(len(r) for r in ms_raw), sum(len(r.encode()) for r in ms_raw)
import hashlib
def receipt(b): return "sha256:"+hashlib.sha256(b.encode()).hexdigest()
# A marker names the result's tool and path ("result of Read logs/0.txt"); a failed result is an
# "error of" with its first line quoted.
MARK="[compactor archived {label}, {n} chars: {r}]"
def flat(t): return t.replace("\n"," ").replace("\r"," ").replace("\t"," ")
def clip_start(t, n): t=flat(t); return t if len(t)<=n else t[:n-1]+"…"   # a name, a first line: its start
def clip_end(t, n): t=flat(t); return t if len(t)<=n else "…"+t[len(t)-(n-1):]  # a path: its end
def label_of(ms, i, tid, blk):
    call=next((b for b in (ms[i-1]["content"] if i>0 and isinstance(ms[i-1]["content"],list) else []) if b.get("type")=="tool_use" and b.get("id")==tid), None)
    lab=("error" if blk.get("is_error") else "result")
    if call is None: return lab
    lab+=" of "+clip_start(call["name"],40)
    for k in ("file_path","path","notebook_path","filePath","file","filename","directory","pattern","url"):
        v=call.get("input",{}).get(k)
        if isinstance(v,str) and v: lab+=" "+clip_end(v,120); break
    if blk.get("is_error"):
        c=blk["content"] if isinstance(blk["content"],str) else ""
        line=c.lstrip(" \t\r\n").split("\n")[0].rstrip(" \r")
        if line: lab+=': "'+clip_start(line,120)+'"'
    return lab
TELL=" An archived result is not an execution result; `compactor restore {r}` gives it back, and so for every such marker."
def told_before(ms, end):
    # a summary first, or any "[compactor " text or string tool_result content before `end`
    if ms and ms[0]["role"]=="user" and isinstance(ms[0]["content"],list) and ms[0]["content"] and ms[0]["content"][0].get("type")=="text" and (ms[0]["content"][0]["text"].startswith("[compactor summary]") or ms[0]["content"][0]["text"].startswith("[compactor reactive summary]")): return True
    for m in ms[:end]:
        blocks=[{"type":"text","text":m["content"]}] if isinstance(m["content"],str) else m["content"]
        for b in blocks:
            t=b.get("text","") if b["type"]=="text" else (b["content"] if b["type"]=="tool_result" and isinstance(b.get("content"),str) else "")
            if t.startswith("[compactor "): return True
    return False
def micro(ms, keep=3, min_chars=110, tail_exchanges=1):
    # independent re-statement of the rule: results in order; all but the newest `keep`; outside the tail; > min_chars;
    # the oldest marker written says how to restore unless something before it does
    res=[(i,b) for i,m in enumerate(ms) if isinstance(m["content"],list) for b,blk in enumerate(m["content"]) if blk["type"]=="tool_result"]
    res=res[:len(res)-keep] if len(res)>keep else []
    # tail: k-th newest assistant
    idx=[i for i,m in enumerate(ms) if m["role"]=="assistant"]
    tail=idx[-tail_exchanges] if tail_exchanges else len(ms)
    out=[json.loads(dumps(m)) for m in ms]; changed=set(); first_block={}
    for i,b in res:
        if i>=tail: continue
        c=out[i]["content"][b]["content"]
        if len(c)<=min_chars: continue
        r=receipt(json.dumps(c,ensure_ascii=False,separators=(',',':')))
        m=MARK.format(label=label_of(ms,i,out[i]["content"][b]["tool_use_id"],out[i]["content"][b]), n=len(c), r=r)
        if len(m)>=len(c): continue
        out[i]["content"][b]["content"]=m; changed.add(i); first_block.setdefault(i,(b,r))
    if changed:
        o=min(changed)
        if not told_before(ms,o):
            b,r=first_block[o]; out[o]["content"][b]["content"]+=TELL.format(r=r)
    return out, changed
ms=conv()
raw=[dumps(m) for m in ms]

# split_pair drops first user message with tool_result (index 2)

def report(config, inp, budget, in_sz, out_sz, first, stages, status, exit_code, resolved, reason="before_call"):
    return {"schema_version":1,"config":"pipeline.yaml","input":"input.json","reason":reason,
            "budget":{"unit":"chars","limit":budget[0],"target":budget[1]},
            "input_size":in_sz,"output_size":out_sz,"first_changed_message":first,"stages":stages,
            "status":status,"error":"","exit_code":exit_code,"resolved_pipeline":resolved}
def sz(raws): c,b=size(raws); return {"messages":len(raws),"chars":c,"bytes":b}
def stage(name, plugin_dir, status, before, after, reason="", violations=()):
    return {"stage":name,"plugin":f"${plugin_dir}/compactor_stage_{name}.so","plugin_version":"0.1.0","status":status,"reason":reason,
            "violations":list(violations),"before":before,"after":after,"wall_us":0}
CHECKERS="[structure, pairing, unique_ids, pairs_unchanged, thinking_unchanged, recent_intact, request_kept, no_growth, archived, cache_control, order]"
def entry(name, plugin_dir, when, params):
    s=f'  - stage: "{name}"\n    plugin: "${plugin_dir}/compactor_stage_{name}.so"  # plugin {name} 0.1.0, API 11\n    when: {when}\n'
    if params: s+="    params:\n"+"".join(f"      {k}: {v}\n" for k,v in params)
    else: s+="    params: {}\n"
    return s
def resolved(limit, target, policy, pipeline, reactive=""):
    s=("# The resolved pipeline (compactor print-pipeline); feeding it back yields the same pipeline.\n"
       f"version: 1\nbudget:\n  unit: chars\n  limit: {limit}\n  target: {target}\nrecent:\n  exchanges: 1\narchive:\n  dir: \".compactor/archive\"\nlimits:\n  stage_timeout_ms: 600000\nsummarizer:\n  kind: \"extractive\"\n"
       f"checkers:\n  enabled: {CHECKERS}\n  on_violation: {policy}\nplugin_dirs: []\n")
    s+= ("pipeline:\n"+pipeline) if pipeline else "pipeline: []\n"
    s+= ("on_prompt_too_long:\n"+reactive) if reactive else "on_prompt_too_long: []\n"
    return s
MICRO2=[("edit_tools",'"Edit MultiEdit NotebookEdit apply_patch replace edit"'),("keep_recent",2),("min_chars",110),("never",'""'),("order",'"newest"'),("until",'"all"')]
def write(case, intent, input_text, config, exit_code, expected_output, rep, args=None):
    d=os.path.join(G,case); os.makedirs(d, exist_ok=True)
    open(d+"/intent.txt","w").write(intent+"\n")
    open(d+"/input.json","w").write(input_text)
    open(d+"/pipeline.yaml","w").write(config)
    open(d+"/expected_exit","w").write(f"{exit_code}\n")
    if expected_output is not None: open(d+"/expected_output.json","w").write(expected_output)
    open(d+"/expected_report.json","w").write(json.dumps(rep, indent=2, ensure_ascii=False)+"\n")
    if args: open(d+"/args","w").write("\n".join(args)+"\n")

ms=conv(5,600); raw=[dumps(m) for m in ms]; IN=sz(raw)
out,ch=micro(ms,keep=2); rawo=[dumps(m) for m in out]; OUT=sz(rawo)
print("in",IN,"out",OUT,sorted(ch))
compact_in=text(ms); compact_out=text(out)

# 1 within budget, pretty input
pretty=json.dumps(ms, indent=2, ensure_ascii=False)+"\n"
praw=[json.dumps(m, indent=2, ensure_ascii=False) for m in ms]
# raw spans of a pretty-printed array are the element texts re-indented by 2; compute from the actual text instead:
import re
cfg1="version: 1\nbudget: {unit: chars, limit: 100000}\npipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2}\n"
# sizes of pretty input: element spans. Parse positions with a decoder.
dec=json.JSONDecoder(); spans=[]; pos=pretty.index('[')+1
while True:
    while pretty[pos] in ' \n,': pos+=1
    if pretty[pos]==']': break
    _,end=dec.raw_decode(pretty,pos); spans.append(pretty[pos:end]); pos=end
PIN=sz(spans)
write("within_budget","Within budget: micro is skipped and the output is byte-identical to the (pretty-printed) input.",
      pretty,cfg1,0,pretty,
      report(cfg1,None,(100000,100000),PIN,PIN,None,[stage("micro","PLUGINS","skipped",PIN,PIN,reason=f"within budget ({PIN['chars']} ≤ 100000 chars)")],"ok",0,
             resolved(100000,100000,"abort",entry("micro","PLUGINS","over_budget",MICRO2))))
# 2 micro over budget
cfg2="version: 1\nbudget: {unit: chars, limit: 3600}\npipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2}\n"
write("micro_over_budget","Over budget: micro replaces the three older results over 110 chars, keeps the newest two, and the run ends within budget.",
      compact_in,cfg2,0,compact_out,
      report(cfg2,None,(3600,3600),IN,OUT,2,[stage("micro","PLUGINS","committed",IN,OUT)],"ok",0,
             resolved(3600,3600,"abort",entry("micro","PLUGINS","over_budget",MICRO2))))
VIOL=["pairing: messages.1: tool_use ids were found without tool_result blocks immediately after: toolu_00 (stage split_pair, plugin $TEST_PLUGINS/compactor_stage_split_pair.so)",
      "archived: messages.2: input messages.2 was dropped, but no receipt in the candidate archives it (stage split_pair, plugin $TEST_PLUGINS/compactor_stage_split_pair.so)"]
# 3 split_pair under skip
cfg3="version: 1\nbudget: {unit: chars, limit: 3600}\ncheckers: {on_violation: skip}\npipeline:\n  - stage: split_pair\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2}\n"
write("split_pair_skip","split_pair breaks a pair: pairing rejects it under skip, the conversation is unchanged, micro still runs, and the run ends `rejected` with exit 1 (its output still written).",
      compact_in,cfg3,1,compact_out,
      report(cfg3,None,(3600,3600),IN,OUT,2,[stage("split_pair","TEST_PLUGINS","rejected",IN,IN,violations=VIOL),stage("micro","PLUGINS","committed",IN,OUT)],"rejected",1,
             resolved(3600,3600,"skip",entry("split_pair","TEST_PLUGINS","always",[])+entry("micro","PLUGINS","over_budget",MICRO2))))
# 4 split_pair under abort, after micro
cfg4="version: 1\nbudget: {unit: chars, limit: 3600}\ncheckers: {on_violation: abort}\npipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2}\n  - stage: split_pair\n"
write("split_pair_abort","Under abort, split_pair's rejected candidate stops the run with exit 1 and micro's committed conversation is written.",
      compact_in,cfg4,1,compact_out,
      report(cfg4,None,(3600,3600),IN,OUT,2,[stage("micro","PLUGINS","committed",IN,OUT),stage("split_pair","TEST_PLUGINS","rejected",OUT,OUT,violations=VIOL)],"aborted",1,
             resolved(3600,3600,"abort",entry("micro","PLUGINS","over_budget",MICRO2)+entry("split_pair","TEST_PLUGINS","always",[]))))
# 5 prompt_too_long runs the reactive pipeline even within budget
cfg5="version: 1\nbudget: {unit: chars, limit: 100000}\npipeline: []\non_prompt_too_long:\n  - stage: micro\n    params: {keep_recent: 2}\n"
write("prompt_too_long","--reason prompt_too_long runs on_prompt_too_long (micro, when always) although the estimate is within budget.",
      compact_in,cfg5,0,compact_out,
      report(cfg5,None,(100000,100000),IN,OUT,2,[stage("micro","PLUGINS","committed",IN,OUT)],"ok",0,
             resolved(100000,100000,"abort","",entry("micro","PLUGINS","always",MICRO2)),reason="prompt_too_long"),
      args=["--reason","prompt_too_long"])
