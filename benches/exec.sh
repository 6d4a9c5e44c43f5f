#!/usr/bin/env bash
# Overhead of `atip exec` over spawning the same trivial tool directly.
# Usage: benches/exec.sh [path/to/atip] [runs]   (build with `cargo build --release` first)
# Target: mean overhead per call < 5 ms.
set -euo pipefail
ATIP=${1:-$(dirname "$0")/../target/release/atip}
ATIP=$(cd "$(dirname "$ATIP")" && pwd)/$(basename "$ATIP")
RUNS=${2:-200}
dir=$(mktemp -d)
[ -n "${BENCH_KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/data/tools" "$dir/bin" "$dir/work"
printf '#!/bin/sh\necho "$@"\n' > "$dir/bin/triv"
chmod +x "$dir/bin/triv"
cat > "$dir/triv.json" <<'JSON'
{"atip":{"version":"0.6"},"name":"triv","version":"1","description":"Trivial tool",
 "commands":{"say":{"description":"Say it","effects":{"destructive":false,"filesystem":{"write":false},"idempotent":true},
   "arguments":[{"name":"word","type":"string","description":"Word"}],
   "options":[{"name":"loud","flags":["--loud"],"type":"boolean","description":"Loud"}]}}}
JSON
hex=$(sha256sum "$dir/triv.json" | cut -d' ' -f1)
mv "$dir/triv.json" "$dir/data/tools/$hex.json"
cat > "$dir/data/registry.json" <<JSON
{"version":"2","updated":"2026-01-01T00:00:00Z","agent":{"name":"atip","version":"0"},
 "tools":{"triv":{"path":"$dir/bin/triv","hash":"sha256:$hex","source":"native","lastChecked":"2026-01-01T00:00:00Z",
  "description":"Trivial tool","atip":"0.6","trust":"native","effects":"read-only","commands":1,"metadata":"tools/$hex.json"}}}
JSON
export ATIP_DATA_DIR=$dir/data ATIP_CONFIG_DIR=$dir/config ATIP_STATE_DIR=$dir/state
cd "$dir/work"
"$ATIP" exec triv_say --args '{"word":"hi","loud":true}' > /dev/null  # warm caches

now() { date +%s%N; }
t0=$(now)
for ((i = 0; i < RUNS; i++)); do "$dir/bin/triv" say --loud hi > /dev/null; done
t1=$(now)
for ((i = 0; i < RUNS; i++)); do "$ATIP" exec triv_say --args '{"word":"hi","loud":true}' > /dev/null; done
t2=$(now)
direct=$(( (t1 - t0) / RUNS ))
via=$(( (t2 - t1) / RUNS ))
printf 'runs: %d\ndirect spawn:   %6d us/call\natip exec:      %6d us/call\noverhead:       %6d us/call (target < 5000)\n' \
  "$RUNS" $((direct / 1000)) $((via / 1000)) $(((via - direct) / 1000))

# Wall time on a shared machine is mostly scheduling latency; CPU time shows atip's own cost.
if command -v perf > /dev/null 2>&1; then
  cpu() { perf stat -r "$RUNS" -x, -e task-clock "$@" 2>&1 > /dev/null | awk -F, '/task-clock/ {print $1}'; }
  d=$(cpu "$dir/bin/triv" say --loud hi)
  v=$(cpu "$ATIP" exec triv_say --args '{"word":"hi","loud":true}')
  awk -v d="$d" -v v="$v" 'BEGIN {printf "cpu (perf task-clock, tool included): direct %.2f ms, atip exec %.2f ms, overhead %.2f ms\n", d, v, v - d}'
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
