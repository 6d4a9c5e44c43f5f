#!/usr/bin/env python3
"""Benchmark `atip sync` against a local static registry (spec/registries.md).

Builds a registry of N shims (default 10,000) with `atip registry build`, a bin dir of
E executables (default 1,000) of which M (default 300) have a shim filed under their hash
and L more (default 200) are listed by name with another hash (hashed, no match), serves
the tree on 127.0.0.1 from this process (ETag / 304, request counter), and runs:

  1. `atip sync` on a fresh machine          (target: 1 catalog + M shims)
  2. `atip sync` again                        (target: 0 requests, all within 24 h)
  3. `atip sync --refresh`                    (target: <= 1 + M conditional requests, all 304)

printing requests (counted by the server), wall time and peak RSS (wait4) of each.
Everything lives in a temp dir removed on exit. Usage:

  benches/remote_sync.py [--atip target/release/atip] [-n 10000] [-e 1000] [-m 300]
"""
import argparse, hashlib, http.server, json, os, shutil, subprocess, sys, tempfile, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("--atip", default="target/release/atip")
ap.add_argument("-n", type=int, default=10000, help="shims in the registry")
ap.add_argument("-e", type=int, default=1000, help="executables on the scanned path")
ap.add_argument("-m", type=int, default=300, help="executables with a shim")
ap.add_argument("-l", type=int, default=200, help="executables listed by name, other hash")
args = ap.parse_args()
atip = os.path.abspath(args.atip)

def shim(name, hexhash):
    return {"atip": {"version": "0.6"}, "name": name, "version": "1.0",
            "description": f"Synthetic tool {name}",
            "binary": {"hash": f"sha256:{hexhash}", "name": name, "version": "1.0", "platform": "linux-amd64"},
            "commands": {"run": {"description": "Run it", "effects": {"network": False, "idempotent": True}}}}

tmp = tempfile.mkdtemp(prefix="atip-remote-bench-")
try:
    src, out, bindir = (os.path.join(tmp, d) for d in ("src", "out", "bin"))
    for d in (src, bindir):
        os.makedirs(d)
    written = 0
    for i in range(args.e):
        name = f"tool{i:05d}"
        p = os.path.join(bindir, name)
        with open(p, "w") as f:
            f.write(f"#!/bin/sh\necho {name}\n")
        os.chmod(p, 0o755)
        if i < args.m:
            h = hashlib.sha256(open(p, "rb").read()).hexdigest()
        elif i < args.m + args.l:
            h = hashlib.sha256(f"other build of {name}".encode()).hexdigest()
        else:
            continue
        json.dump(shim(name, h), open(os.path.join(src, h + ".json"), "w"))
        written += 1
    for i in range(args.n - written):
        name = f"remote{i:05d}"
        h = hashlib.sha256(name.encode()).hexdigest()
        json.dump(shim(name, h), open(os.path.join(src, h + ".json"), "w"))

    env = {"PATH": "/usr/bin:/bin", "HOME": os.path.join(tmp, "home"),
           "XDG_CACHE_HOME": os.path.join(tmp, "cache"), "XDG_DATA_DIRS": os.path.join(tmp, "sys"),
           "MANPATH": os.path.join(tmp, "man"), "TMPDIR": tmp,
           "ATIP_DATA_DIR": os.path.join(tmp, "data"), "ATIP_CONFIG_DIR": os.path.join(tmp, "config"),
           "ATIP_STATE_DIR": os.path.join(tmp, "state")}

    def run(argv):
        t0 = time.monotonic()
        p = subprocess.run([atip] + argv, env=env, capture_output=True)
        return p.returncode, time.monotonic() - t0, p.stdout, p.stderr

    # Peak RSS through wait4 on the child itself.
    def run_measured(argv):
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            fd = os.open(os.path.join(tmp, "out.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            err = os.open(os.path.join(tmp, "err.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(err, 2)
            os.execve(atip, [atip] + argv, env)
        _, status, ru = os.wait4(pid, 0)
        wall = time.monotonic() - t0
        return os.waitstatus_to_exitcode(status), wall, ru.ru_maxrss / 1024.0

    code, wall, _, err = run(["registry", "build", src, out, "--name", "bench", "--output", "json"])
    assert code == 0, err.decode()
    print(f"registry build: {args.n} shims in {wall:.2f} s")

    count = {"n": 0, "304": 0}
    lock = threading.Lock()

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *a):
            pass
        def do_GET(self):
            rel = self.path.lstrip("/")
            p = os.path.join(out, rel)
            with lock:
                count["n"] += 1
            if ".." in rel or not os.path.isfile(p):
                self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
            body = open(p, "rb").read()
            etag = '"%s"' % hashlib.sha256(body).hexdigest()[:16]
            if self.headers.get("If-None-Match") == etag:
                with lock:
                    count["304"] += 1
                self.send_response(304); self.send_header("ETag", etag); self.end_headers(); return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body))); self.send_header("ETag", etag)
            self.end_headers(); self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    code, _, _, err = run(["registry", "add", "bench", url])
    assert code == 0, err.decode()

    print(f"{args.e} executables, {args.m} with a shim, {args.l} more listed by name; {args.n} shims")
    print("| run | requests | 304 | wall | peak RSS | registered from remote |")
    print("|---|---|---|---|---|---|")
    for label, extra in (("fresh", []), ("again (< 24 h)", []), ("--refresh", ["--refresh"])):
        with lock:
            count["n"] = count["304"] = 0
        code, wall, rss = run_measured(["sync", "--output", "json", "--path", bindir] + extra)
        report = json.load(open(os.path.join(tmp, "out.json")))
        if code != 0:
            sys.exit(f"{label}: exit {code}: {open(os.path.join(tmp, 'err.txt')).read()}")
        remote = sum(1 for t in report["tools"] if t["source"] == "remote")
        print(f"| {label} | {count['n']} | {count['304']} | {wall:.2f} s | {rss:.0f} MB | {remote} |")
    srv.shutdown()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
