#!/usr/bin/env bash
# Man-page inference on this machine's real PATH: cold scan, warm rescan, peak memory,
# names described per source, and (when fish is installed) fish's man-page completion
# generator over the same pages, in the same run. Run by hand; CI never runs it.
#
#   benches/infer-scan.sh            # release build, 3 reps
#   REPS=5 ATIP_BIN=target/release/atip benches/infer-scan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
BIN=${ATIP_BIN:-target/release/atip}
[ -x "$BIN" ] || cargo build --release --quiet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export HOME="$WORK/home" XDG_DATA_HOME="$WORK/xdg" XDG_CONFIG_HOME="$WORK/xdg-config" \
  XDG_STATE_HOME="$WORK/xdg-state" TMPDIR="$WORK"
mkdir -p "$HOME"
run() { "$BIN" --data-dir "$WORK/data" --config-dir "$WORK/config" scan --output json "$@"; }
ms() { python3 -c 'import sys,time; print(int(float(sys.argv[1])*1000))' "$1"; }
timed() { local s e; s=$(date +%s.%N); "$@" > "$WORK/report.json"; e=$(date +%s.%N); python3 -c "print(round(($e-$s)*1000))"; }

echo "PATH: $(tr ':' '\n' <<<"$PATH" | wc -l) dirs; MANPATH=${MANPATH:-<unset: derived from PATH>}"
cold=(); warm=()
for _ in $(seq "$REPS"); do
  rm -rf "$WORK/data"
  cold+=("$(timed run)")
  warm+=("$(timed run)")
done
python3 - "$WORK/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print(f"names {s['names']}, executables {s['executables']}; by source: {s.get('sources')}")
described = sum(v for k, v in s.get("sources", {}).items() if k != "none")
print(f"names described: {described}")
PY
echo "cold scan ms: ${cold[*]}"
echo "warm rescan ms: ${warm[*]}"

# Peak memory of a cold scan.
rm -rf "$WORK/data"
if [ -x /usr/bin/time ]; then
  /usr/bin/time -v "$BIN" --data-dir "$WORK/data" --config-dir "$WORK/config" scan --output json \
    > /dev/null 2> "$WORK/time.txt"
  echo "cold scan peak RSS: $(awk -F: '/Maximum resident/ {gsub(/ /,"",$2); print int($2/1024) " MB"}' "$WORK/time.txt")"
else
  python3 - "$BIN" "$WORK" <<'PY'
import resource, subprocess, sys
b, w = sys.argv[1], sys.argv[2]
subprocess.run([b, "--data-dir", w + "/data2", "--config-dir", w + "/config", "scan", "--output", "json"], stdout=subprocess.DEVNULL, check=True)
print(f"cold scan peak RSS: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024} MB")
PY
fi

# Does a warm rescan open any man page? (strace, when available)
if command -v strace > /dev/null; then
  strace -f -e trace=openat -o "$WORK/strace.txt" "$BIN" --data-dir "$WORK/data" \
    --config-dir "$WORK/config" scan --output json > /dev/null 2>&1 || true
  echo "man pages opened by a warm rescan: $(grep -c '/man[0-9]/' "$WORK/strace.txt" || true)"
else
  echo "strace not installed: man pages opened by a warm rescan not measured"
fi

# Validity of every inferred document.
python3 - "$WORK/data" > "$WORK/inferred.txt" <<'PY'
import json, sys
d = sys.argv[1]
for e in json.load(open(d + "/registry.json"))["tools"].values():
    if e["source"] == "inferred":
        print(d + "/" + e["metadata"])
PY
xargs "$BIN" validate --deny-warnings < "$WORK/inferred.txt" > /dev/null \
  && echo "every inferred document passes validate --deny-warnings" \
  || echo "SOME inferred documents fail validate --deny-warnings"

# fish's generator over the same pages, when fish is installed.
GEN=$(ls /usr/share/fish/tools/create_manpage_completions.py 2>/dev/null || true)
if [ -n "$GEN" ] && command -v python3 > /dev/null; then
  # The pages atip inferred its registered tools from (the scan report names each).
  python3 - "$WORK/report.json" > "$WORK/pages.txt" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1]))["tools"]:
    if t.get("source") == "inferred":
        print(t["shim"])
PY
  mkdir -p "$WORK/fish"
  s=$(date +%s.%N)
  python3 "$GEN" -d "$WORK/fish" $(sort -u "$WORK/pages.txt") > /dev/null 2>&1 || true
  e=$(date +%s.%N)
  echo "fish generator over $(sort -u "$WORK/pages.txt" | wc -l) pages: $(ls "$WORK/fish" | wc -l) commands, $(cat "$WORK"/fish/*.fish 2>/dev/null | grep -c '^complete') options, $(python3 -c "print(round(($e-$s)*1000))") ms"
  python3 - "$WORK/data" "$WORK/report.json" <<'PY'
import json, os, sys
d = sys.argv[1]
reg = json.load(open(d + "/registry.json"))["tools"]
pages, top = set(), 0
for t in json.load(open(sys.argv[2]))["tools"]:
    if t.get("source") != "inferred" or t["shim"] in pages:
        continue
    pages.add(t["shim"])
    doc = json.load(open(os.path.join(d, reg[t["name"]]["metadata"])))
    root = (doc.get("commands") or {}).get("") or {}
    top += len(doc.get("globalOptions") or []) + len(doc.get("options") or []) + len(root.get("options") or [])
print(f"atip over the same {len(pages)} pages: {top} top-level options (subcommands' not counted)")
PY
  benches/fish_labelled.py "$GEN" | tail -n 1
else
  echo "fish not installed: generator comparison skipped (apt-get install fish)"
fi
