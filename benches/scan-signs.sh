#!/usr/bin/env bash
# benches/scan-signs.sh - by-hand measurement of `atip scan` on a real PATH: how many
# executables show an ATIP sign (and would be probed by a default scan), which ones,
# the evidence classes, and the cold and warm scan times. CI never runs it.
#
# Usage: benches/scan-signs.sh [-p PATH] [-r REPS] [-h]
#   -p PATH   the PATH to measure (default: this shell's $PATH)
#   -r REPS   repetitions of the timed cold and warm scans (default 3)
# Env:
#   ATIP_BIN  atip binary to measure (default: `cargo build --release`, then target/release/atip)
#
# Every scan uses throw-away --data-dir/--config-dir under one temp dir, removed on exit.
# Step 1 is a dry run: it reads every executable's evidence and RUNS NOTHING; the
# executables it would probe are the false-positive candidates (a tool that really
# answers --agent is a true positive: check the list by hand). Steps 2-3 run real
# default-mode scans (which probe exactly those executables, under the process contract).
set -euo pipefail

SCAN_PATH="$PATH"
REPS=3
while getopts "p:r:h" opt; do
  case "$opt" in
    p) SCAN_PATH="$OPTARG" ;;
    r) REPS="$OPTARG" ;;
    h) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "bad option; -h for help" >&2; exit 2 ;;
  esac
done
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || { echo "-r must be a positive number" >&2; exit 2; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -n "${ATIP_BIN:-}" ]; then
  ATIP="$ATIP_BIN"
else
  echo "building atip (release)..." >&2
  (cd "$ROOT" && cargo build --release --quiet)
  ATIP="$ROOT/target/release/atip"
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

scan() { # scan DATADIR ARGS...
  local d="$1"; shift
  "$ATIP" --data-dir "$d/data" --config-dir "$d/config" scan --path "$SCAN_PATH" --output json "$@"
}
now_ms() { date +%s%3N; }

echo "== evidence (dry run: nothing is run)"
scan "$WORK/dry" --dry-run --no-builtin-shims > "$WORK/dry.json" || true
python3 - "$WORK/dry.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print(f"files {s['executables']}, names {s['names']}, evidence {json.dumps(s['evidence'], sort_keys=True)}")
plan = r.get("wouldProbe") or []
print(f"executables a default scan would probe: {len(plan)}")
for p in plan:
    print(f"  {p['name']:<28} {p['path']}  ({p['why']})")
EOF

echo "== cold scan (fresh data dir each rep), then warm rescan"
cold=(); warm=()
for i in $(seq "$REPS"); do
  rm -rf "$WORK/run"
  t0=$(now_ms); scan "$WORK/run" > "$WORK/cold.json" || true; t1=$(now_ms)
  cold+=($((t1 - t0)))
  t0=$(now_ms); scan "$WORK/run" > /dev/null || true; t1=$(now_ms)
  warm+=($((t1 - t0)))
done
python3 - "$WORK/cold.json" "${cold[*]}" "${warm[*]}" <<'EOF'
import json, sys, statistics
r = json.load(open(sys.argv[1]))
cold = [int(x) for x in sys.argv[2].split()]
warm = [int(x) for x in sys.argv[3].split()]
print(f"cold scan ms min/median {min(cold)}/{statistics.median(cold)}; warm rescan ms min/median {min(warm)}/{statistics.median(warm)}")
s = r["summary"]
answered = {t["name"] for t in r["tools"] if t["source"] == "native"}
failed = [f["name"] for f in r["failed"]]
print(f"probed {s['probed']}: answered --agent {len(answered)}; probed without a valid answer {len(failed)} {failed}")
print(f"registered {len(r['tools'])} (by source: " + json.dumps({k: sum(1 for t in r['tools'] if t['source'] == k) for k in sorted({t['source'] for t in r['tools']})}) + ")")
EOF
