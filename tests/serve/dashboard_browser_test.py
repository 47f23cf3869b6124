#!/usr/bin/env python3
"""serve's /dashboard in a real browser (Debian's chromium, headless): a stand-in upstream and serve
on loopback, a scripted run (two tenants; alice's first call compacted, her second continues it,
bob's one call changes nothing), then the page as chromium builds it (--dump-dom) shows each
tenant's calls, compactions and what they saved (tokens and USD worked out here from the body the
upstream received: both of alice's calls forwarded the first's masking), the config's hash and generation, the compaction with its sizes and receipt,
and the store's health; its screenshot (kept in ARTIFACT_DIR as dashboard.png) is the size asked
for, drawn with the page's own sheet (the background the Content-Security-Policy admits by hash,
not the browser's white) and shows the charts' bars. The page is refused to a remote client
without the credential /metrics takes (403 by a proxy's header; 401 without the token of
serve.metrics_token_env, 200 with it).

usage: dashboard_browser_test.py COMPACTOR PLUGIN_DIR ARTIFACT_DIR
Exit status 0 when every check holds, 1 otherwise.
"""
import hashlib
import html.parser
import http.client
import http.server
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import zlib

failures = []


def check(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    bodies = []

    def do_POST(self):
        Upstream.bodies.append(self.rfile.read(int(self.headers.get("content-length", 0))).decode())
        reply = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "op-model",
                            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                            "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


def history():
    """A task and 4 Read exchanges (the first result 12,000 chars, the others 800), as compact JSON."""
    out = [{"role": "user", "content": "Read the files one by one."}]
    for i in range(1, 5):
        tid = f"toolu_{i:02d}"
        out.append({"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Read",
                                                      "input": {"file_path": f"/w/f{i:02d}.txt"}}]})
        out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                 "content": "a" * (12000 if i == 1 else 800)}]})
    return [json.dumps(m, separators=(",", ":")) for m in out]


def body(messages):
    return '{"model":"op-model","max_tokens":1024,"system":"You are a coding agent.","messages":[' + ",".join(messages) + "]}"


def chars4(text):
    return (len(text) + 3) // 4


def start_serve(cli, work, config, upstream_port, env=None):
    serve = subprocess.Popen([cli, "serve", "--config", config, "--listen", "127.0.0.1:0", "--upstream",
                              f"http://127.0.0.1:{upstream_port}"], cwd=work, stdout=subprocess.PIPE,
                             stderr=open(os.path.join(work, "serve.err"), "a"), text=True, env=dict(os.environ, **(env or {})))
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", serve.stdout.readline())
    if not m:
        serve.kill()
        sys.exit("serve did not start: " + open(os.path.join(work, "serve.err")).read())
    return serve, int(m.group(1))


def request(port, method, path, data=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=data, headers=headers or {})
    r = c.getresponse()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode())
    c.close()
    return out


class Cells(html.parser.HTMLParser):
    """Each table row's cells by class (rows with data-tenant by tenant; compaction rows in order),
    the text of every element with an id, and whether any script is there."""

    def __init__(self):
        super().__init__()
        self.tenants, self.compactions, self.ids, self.scripts, self.rects = {}, [], {}, 0, 0
        self.row, self.cell, self.idstack = None, None, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "rect":
            self.rects += 1
        if tag == "tr":
            self.row = {}
            if "data-tenant" in a:
                self.tenants[a["data-tenant"]] = self.row
            elif a.get("class") == "compaction":
                self.compactions.append(self.row)
        if tag == "td" and self.row is not None:
            self.cell = (a.get("class") or "").split(" ")[-1]
            self.row[self.cell] = ""
        if "id" in a:
            self.idstack.append((tag, a["id"]))
            self.ids[a["id"]] = ""

    def handle_endtag(self, tag):
        if self.idstack and self.idstack[-1][0] == tag:
            self.idstack.pop()
        if tag == "td":
            self.cell = None
        if tag == "tr":
            self.row = None

    def handle_data(self, data):
        if self.row is not None and self.cell is not None:
            self.row[self.cell] += data
        for _, i in self.idstack[-1:]:
            self.ids[i] += data


def png_pixels(path):
    """Width, height and the first rows of an 8-bit RGB or RGBA PNG (filters undone)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    width, height, depth, color = ihdr[0], ihdr[1], ihdr[2], ihdr[3]
    assert depth == 8 and color in (2, 6), f"PNG of depth {depth}, color type {color}"
    bpp = 3 if color == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - bpp] if x >= bpp else 0
            up, ul = prev[x], prev[x - bpp] if x >= bpp else 0
            p = left + up - ul
            pred = [0, left, up, (left + up) // 2,
                    left if abs(p - left) <= abs(p - up) and abs(p - left) <= abs(p - ul) else up if abs(p - up) <= abs(p - ul) else ul][f]
            line[x] = (line[x] + pred) & 0xFF
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def chromium(args, work):
    profile = tempfile.mkdtemp(dir=work)
    return subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={profile}"] + args, capture_output=True, text=True, timeout=120)


def main():
    cli, plugins, artifacts = sys.argv[1:4]
    if shutil.which("chromium") is None:
        sys.exit("chromium is not installed: bash tools/setup.sh --tests installs it")
    work = tempfile.mkdtemp(prefix="compactor-dashboard-")
    token = {n: hashlib.sha256(f"{n}-token".encode()).hexdigest() for n in ("alice", "bob")}
    with open(os.path.join(work, "prices.yaml"), "w") as f:
        f.write('version: 1\nsource: the test\ndate: "2026-12-01"\nwindow_source: the test\nwindow_date: "2026-12-01"\n'
                "default_model: op-model\nmodels:\n  op-model:\n    family: op\n    match: [op-model]\n"
                "    input: 3.00\n    cache_write: 3.75\n    cache_read: 0.30\n    output: 15.00\n    context_window: 200000\n")
    config = ("version: 1\nbudget: {unit: chars, limit: 10000, target: 8000}\nmeter: {kind: chars4}\nprices: prices.yaml\n"
              f"archive: {{dir: archive}}\nplugin_dirs: [\"{plugins}\"]\n"
              "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 1, min_chars: 5000}\n"
              f"serve:\n  clients:\n    - {{name: alice, token_sha256: \"{token['alice']}\"}}\n"
              f"    - {{name: bob, token_sha256: \"{token['bob']}\"}}\n")
    for name, extra in (("c.yaml", ""), ("scraped.yaml", "  metrics_token_env: DASH_TOKEN\n")):
        with open(os.path.join(work, name), "w") as f:
            f.write(config + extra)
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    serve, port = start_serve(cli, work, "c.yaml", upstream.server_address[1])
    try:
        h = history()
        calls = [("alice", h[:7]), ("alice", h[:9]), ("bob", h[:1])]
        answers = [request(port, "POST", "/v1/messages", body(m), {"x-compactor-token": f"{who}-token", "x-api-key": f"sk-{who}"})
                   for who, m in calls]
        check([a[1].get("x-compactor-status") for a in answers] == ["compacted", "unchanged", "unchanged"],
              f"the scripted run: {[a[1].get('x-compactor-status') for a in answers]}")
        sent = [json.dumps(m, separators=(",", ":")) for m in json.loads(Upstream.bodies[0])["messages"]]
        # Both of alice's calls forwarded the first's masking: each saved its tokens.
        tokens = 2 * (chars4(h[2]) - chars4(sent[2]))
        usd = tokens * 3.00 / 1e6
        receipt = answers[0][1].get("x-compactor-receipts", "")
        before, after = answers[0][1].get("x-compactor-size-before"), answers[0][1].get("x-compactor-size-after")

        status, headers, _ = request(port, "GET", "/dashboard")
        csp = headers.get("content-security-policy", "")
        check(status == 200 and headers.get("content-type", "").startswith("text/html"), f"/dashboard answers a page ({status})")
        check("default-src 'none'" in csp and "style-src 'sha256-" in csp, f"it forbids every resource but its own sheet: {csp}")

        dom = chromium(["--dump-dom", f"http://127.0.0.1:{port}/dashboard"], work)
        check(dom.returncode == 0 and "</html>" in dom.stdout, f"chromium loaded the page ({dom.returncode}: {dom.stderr[-300:]})")
        page = Cells()
        page.feed(dom.stdout)
        alice, bob = page.tenants.get("alice", {}), page.tenants.get("bob", {})
        check(alice.get("calls") == "2" and alice.get("compactions") == "1", f"alice: 2 calls, 1 compaction ({alice})")
        check(alice.get("saved-tokens") == str(tokens), f"alice saved {tokens} tokens ({alice.get('saved-tokens')})")
        check(alice.get("saved-usd") == f"${usd:.6f}", f"alice saved ${usd:.6f} ({alice.get('saved-usd')})")
        check(bob.get("calls") == "1" and bob.get("compactions") == "0" and bob.get("saved-usd") == "$0.000000",
              f"bob: 1 call, nothing saved ({bob})")
        expected_hash = hashlib.sha256(subprocess.run([cli, "print-pipeline", "--config", os.path.join(work, "c.yaml")],
                                                      capture_output=True, check=True).stdout).hexdigest()[:12]
        check(page.ids.get("config-hash") == expected_hash and page.ids.get("config-generation") == "1",
              f"the config: {page.ids.get('config-hash')} generation {page.ids.get('config-generation')} (expected {expected_hash} 1)")
        first = page.compactions[0] if page.compactions else {}
        check(len(page.compactions) == 1 and first.get("tenant") == "alice" and first.get("before") == before and
              first.get("after") == after and first.get("receipts") == receipt and receipt.startswith("sha256:"),
              f"the one compaction, its sizes and receipt ({first}; headers {before} {after} {receipt})")
        check(page.ids.get("store-kind") == "folder" and page.ids.get("store-health") == "reachable",
              f"the store: {page.ids.get('store-kind')}, {page.ids.get('store-health')}")
        check(page.scripts == 0 and page.rects == 4, f"no script, a bar per tenant in both charts ({page.scripts}, {page.rects})")

        os.makedirs(artifacts, exist_ok=True)
        shot = os.path.join(artifacts, "dashboard.png")
        if os.path.exists(shot):
            os.remove(shot)
        run = chromium([f"--screenshot={shot}", "--window-size=1000,900", f"http://127.0.0.1:{port}/dashboard"], work)
        check(run.returncode == 0 and os.path.exists(shot), f"chromium took a screenshot ({run.returncode}: {run.stderr[-300:]})")
        if os.path.exists(shot):
            width, height, rows = png_pixels(shot)
            check((width, height) == (1000, 900) and os.path.getsize(shot) > 10000,
                  f"{shot}: {width}x{height}, {os.path.getsize(shot)} bytes")
            check(rows[2][2] == (250, 251, 252), f"drawn with the page's sheet (background {rows[2][2]}, not the browser's white)")
            blue = sum(1 for row in rows for p in row if p == (47, 111, 222))
            check(blue > 500, f"the charts' bars are drawn ({blue} pixels of their blue)")

        # A remote client (a proxy's header) without the credential: refused, nothing of anyone.
        status, _, text = request(port, "GET", "/dashboard", headers={"x-forwarded-for": "203.0.113.7"})
        check(status == 403 and "alice" not in text and "serve.metrics_token_env" in text, f"a proxied request is refused: {status} {text!r}")
    finally:
        serve.terminate()
        serve.wait(30)
    scraped, port = start_serve(cli, work, "scraped.yaml", upstream.server_address[1], {"DASH_TOKEN": "dash-secret"})
    try:
        status, headers, text = request(port, "GET", "/dashboard", headers={"x-forwarded-for": "10.0.0.9"})
        check(status == 401 and headers.get("www-authenticate") == "Bearer" and "alice" not in text, f"without the token: {status}")
        status, _, text = request(port, "GET", "/dashboard", headers={"authorization": "Bearer dash-secret", "x-forwarded-for": "10.0.0.9"})
        check(status == 200 and 'data-tenant="alice"' in text, f"with the token: {status}")
    finally:
        scraped.terminate()
        scraped.wait(30)
        upstream.shutdown()
    if failures:
        print(f"{len(failures)} of the checks failed; serve's log: {os.path.join(work, 'serve.err')}")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
