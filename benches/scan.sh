#!/usr/bin/env bash
# benches/scan.sh - by-hand benchmark of `atip scan` on synthetic PATH trees.
# Run it yourself on an otherwise quiet machine. CI never runs it.
#
# Usage: benches/scan.sh [-n N] [-r REPS] [-t TIMEOUT] [-k] [-h]
#   -n N        canary executables per tree (default 2000)
#   -r REPS     repetitions of each timed run; min and median are shown (default 3)
#   -t TIMEOUT  the scan's --timeout (default 2s)
#   -k          keep the work directory (trees, registries, logs) and print its path
# Env:
#   ATIP_BIN    atip binary to measure (default: `cargo build --release`, then
#               target/release/atip)
#   BENCH_GEN   path of make-fake-path.sh (default: ../shared/bench/ beside the repo)
#   SCAN_EXTRA  extra scan arguments, split on spaces (e.g. "--jobs 8")
#   HOSTILE_SLEEP, HANG_SLEEP, HUGE_MB  generator knobs (defaults here: 5, 60, 200)
#
# What it measures, each scan with a throw-away data/config dir (and HOME, XDG_*, TMPDIR)
# under one temp dir:
#   1. cold scan of the clean tree (2,000 canaries + ATIP tools, no hostile tools: -H)
#   2. warm rescan of that unchanged tree: wall time. Under strace (if it works here):
#      processes spawned and tree files opened (not directories)
#   3. cold scan of the tree with the hostile tools (hang, ignore SIGTERM, grandchildren
#      holding stdout, 200 MB output, ...) and the processes left behind afterwards:
#      in default mode, and with `hostile-*` allowlisted so that every hostile probe runs
#   4. peak RSS of clean and hostile cold scans: /usr/bin/time -v, else getrusage
#      through python3
#   5. canary executions across all of the above (lines of each tree's exec.log
#      naming canary-*). Default probe mode must run none.
# The scan command is:
#   atip --data-dir D --config-dir C scan --path "$P" --output json --timeout T
set -euo pipefail

N=2000
REPS=3
TIMEOUT=2s
KEEP=0
while getopts "n:r:t:kh" opt; do
  case "$opt" in
    n) N="$OPTARG" ;;
    r) REPS="$OPTARG" ;;
    t) TIMEOUT="$OPTARG" ;;
    k) KEEP=1 ;;
    h) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "bad option; -h for help" >&2; exit 2 ;;
  esac
done
[[ "$N" =~ ^[0-9]+$ ]] || { echo "-n must be a number" >&2; exit 2; }
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || { echo "-r must be a positive number" >&2; exit 2; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GEN="${BENCH_GEN:-$ROOT/../shared/bench/make-fake-path.sh}"
if [ ! -f "$GEN" ]; then
  echo "generator not found at $GEN; set BENCH_GEN=/path/to/make-fake-path.sh" >&2
  exit 66
fi

if [ -n "${ATIP_BIN:-}" ]; then
  ATIP="$ATIP_BIN"
else
  echo "building atip (release)..." >&2
  (cd "$ROOT" && cargo build --release --quiet)
  ATIP="$ROOT/target/release/atip"
fi
[ -x "$ATIP" ] || { echo "atip binary not executable: $ATIP" >&2; exit 66; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/atip-bench-scan.XXXXXX")"
mkdir -p "$WORK/tmp" "$WORK/home" "$WORK/xdg-system" "$WORK/logs"

# Pids of processes whose working directory is inside $WORK: every probe runs in a
# temp dir under $WORK/tmp (atip's TMPDIR), so these are probes' leftovers.
leftovers() {
  local p cwd
  for p in /proc/[0-9]*; do
    cwd="$(readlink "$p/cwd" 2>/dev/null)" || continue
    case "$cwd" in "$WORK"/*) echo "${p#/proc/}" ;; esac
  done
}

kill_leftovers() {
  local pids
  pids="$(leftovers || true)"
  [ -z "$pids" ] && return 0
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
}

cleanup() {
  local rc=$?
  kill_leftovers
  if [ "$KEEP" = 1 ]; then
    echo "work directory kept: $WORK" >&2
  else
    chmod -R u+w "$WORK" 2>/dev/null || true
    rm -rf -- "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export HOSTILE_SLEEP="${HOSTILE_SLEEP:-5}" HANG_SLEEP="${HANG_SLEEP:-60}" HUGE_MB="${HUGE_MB:-200}"
echo "generating trees (n=$N) under $WORK ..." >&2
# The generator's last line is the PATH string, possibly written as `PATH=...`.
gen_path() {
  local line
  line="$("$GEN" "$@" | tail -n 1)"
  line="${line#export }"
  line="${line#PATH=}"
  case "$line" in /*) echo "$line" ;; *) echo "unexpected generator output: $line" >&2; exit 1 ;; esac
}
PATH_CLEAN="$(gen_path -n "$N" -o "$WORK/clean" -f -H)"
PATH_HOSTILE="$(gen_path -n "$N" -o "$WORK/hostile" -f)"

now_ns() { date +%s%N; }

# atip in a hermetic environment: nothing of the caller's HOME, XDG dirs or secrets.
atip_env() {
  env -i PATH=/usr/bin:/bin LANG=C.UTF-8 HOME="$WORK/home" TMPDIR="$WORK/tmp" \
    XDG_DATA_HOME="$WORK/home/.local/share" XDG_CONFIG_HOME="$WORK/home/.config" \
    XDG_STATE_HOME="$WORK/home/.local/state" XDG_CACHE_HOME="$WORK/home/.cache" \
    XDG_DATA_DIRS="$WORK/xdg-system" XDG_CONFIG_DIRS="$WORK/xdg-system" "$@"
}

# scan_cmd DATA CONFIG PATHSTRING: prints nothing, sets SCAN (an array).
scan_cmd() {
  SCAN=("$ATIP" --data-dir "$1" --config-dir "$2" scan --path "$3" --output json --timeout "$TIMEOUT")
  # shellcheck disable=SC2206
  [ -n "${SCAN_EXTRA:-}" ] && SCAN+=($SCAN_EXTRA)
  return 0
}

# timed LABEL DATA CONFIG PATHSTRING: one scan; sets LAST_MS and LAST_RC.
timed() {
  local label="$1" t0 t1
  scan_cmd "$2" "$3" "$4"
  t0="$(now_ns)"
  set +e
  atip_env "${SCAN[@]}" >"$WORK/logs/$label.json" 2>"$WORK/logs/$label.err"
  LAST_RC=$?
  set -e
  t1="$(now_ns)"
  LAST_MS=$(( (t1 - t0) / 1000000 ))
  if [ "$LAST_RC" -ge 2 ]; then
    echo "warning: $label exited $LAST_RC; stderr tail:" >&2
    tail -n 5 "$WORK/logs/$label.err" >&2 || true
  fi
}

# peak LABEL DATA CONFIG PATHSTRING: one scan; sets LAST_RSS_KB (max RSS of atip or any
# process it waited for).
peak() {
  local label="$1"
  scan_cmd "$2" "$3" "$4"
  set +e
  if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then
    atip_env /usr/bin/time -v -o "$WORK/logs/$label.time" "${SCAN[@]}" \
      >"$WORK/logs/$label.json" 2>"$WORK/logs/$label.err"
    LAST_RSS_KB="$(sed -n 's/.*Maximum resident set size (kbytes): *//p' "$WORK/logs/$label.time")"
  else
    LAST_RSS_KB="$(atip_env python3 -c '
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
    subprocess.call(sys.argv[3:], stdout=out, stderr=err)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
' "$WORK/logs/$label.json" "$WORK/logs/$label.err" "${SCAN[@]}")"
  fi
  set -e
  : "${LAST_RSS_KB:=?}"
}

# stats V...: "min / median" of integers.
stats() {
  printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {printf "%d / %d", v[1], v[int((NR+1)/2)]}'
}

canary_lines() { grep -c 'canary-' "$1/exec.log" 2>/dev/null || true; }
# Canary executions since generation (the generator's own runs, if any, don't count).
BASE_CLEAN="$(canary_lines "$WORK/clean")"
BASE_HOSTILE="$(canary_lines "$WORK/hostile")"
canaries() { echo $(( $(canary_lines "$1") - $2 )); }

fresh_dirs() { rm -rf -- "$WORK/$1"; mkdir -p "$WORK/$1/data" "$WORK/$1/config"; }

tools_in() {
  python3 - "$1/registry.json" 2>/dev/null <<'PY' || echo "?"
import json, sys
print(len(json.load(open(sys.argv[1])).get("tools", {})))
PY
}

# ---- 1. clean tree, cold -------------------------------------------------------------
cold_clean=()
for i in $(seq 1 "$REPS"); do
  fresh_dirs clean-run
  timed "clean-cold-$i" "$WORK/clean-run/data" "$WORK/clean-run/config" "$PATH_CLEAN"
  cold_clean+=("$LAST_MS")
  kill_leftovers
done
clean_rc="$LAST_RC"
clean_tools="$(tools_in "$WORK/clean-run/data")"

# ---- 2. clean tree, warm (same registry as the last cold run) --------------------------
warm=()
for i in $(seq 1 "$REPS"); do
  timed "clean-warm-$i" "$WORK/clean-run/data" "$WORK/clean-run/config" "$PATH_CLEAN"
  warm+=("$LAST_MS")
done
warm_rc="$LAST_RC"

warm_execs="n/a (strace unavailable)"
warm_opens="n/a"
if command -v strace >/dev/null 2>&1 && strace -f -qq -o /dev/null true 2>/dev/null; then
  scan_cmd "$WORK/clean-run/data" "$WORK/clean-run/config" "$PATH_CLEAN"
  atip_env "$(command -v strace)" -f -qq -e trace=execve,openat -o "$WORK/logs/warm.strace" \
    "${SCAN[@]}" >/dev/null 2>&1 || true
  # Successful execve calls, minus atip's own.
  warm_execs=$(( $(grep 'execve' "$WORK/logs/warm.strace" | grep -c '= 0$' || true) - 1 ))
  # Files (not directories) of the tree opened.
  warm_opens="$(grep 'openat(' "$WORK/logs/warm.strace" | grep -F "\"$WORK/clean/" \
    | grep -vc 'O_DIRECTORY' || true)"
fi

# ---- 3. hostile tree, cold -----------------------------------------------------------
cold_hostile=()
left=()
for i in $(seq 1 "$REPS"); do
  fresh_dirs hostile-run
  timed "hostile-cold-$i" "$WORK/hostile-run/data" "$WORK/hostile-run/config" "$PATH_HOSTILE"
  cold_hostile+=("$LAST_MS")
  left+=("$(leftovers | wc -l)")
  kill_leftovers
done
hostile_rc="$LAST_RC"
hostile_tools="$(tools_in "$WORK/hostile-run/data")"

# Default mode probes only executables that show a sign of ATIP, so most hostile tools
# (hang, ignore SIGTERM, ...) are never run. Allowlisting them (<config>/config.json,
# spec/scan.md) makes every hostile probe run: the timeout-bound worst case.
allow_hostile() { printf '{"probe": {"allow": ["hostile-*"]}}\n' >"$1/config.json"; }
cold_allowed=()
left_allowed=()
for i in $(seq 1 "$REPS"); do
  fresh_dirs allowed-run
  allow_hostile "$WORK/allowed-run/config"
  timed "allowed-cold-$i" "$WORK/allowed-run/data" "$WORK/allowed-run/config" "$PATH_HOSTILE"
  cold_allowed+=("$LAST_MS")
  left_allowed+=("$(leftovers | wc -l)")
  kill_leftovers
done
allowed_rc="$LAST_RC"

# ---- 4. peak memory --------------------------------------------------------------------
fresh_dirs clean-peak
peak clean-peak "$WORK/clean-peak/data" "$WORK/clean-peak/config" "$PATH_CLEAN"
rss_clean="$LAST_RSS_KB"
kill_leftovers
fresh_dirs hostile-peak
allow_hostile "$WORK/hostile-peak/config"
peak hostile-peak "$WORK/hostile-peak/data" "$WORK/hostile-peak/config" "$PATH_HOSTILE"
rss_hostile="$LAST_RSS_KB"
kill_leftovers

mb() { case "$1" in ''|*[!0-9]*) echo "?";; *) awk -v k="$1" 'BEGIN {printf "%.1f MB", k/1024}';; esac; }

# ---- 5. report -------------------------------------------------------------------------
timeout_ms="$(awk -v t="$TIMEOUT" 'BEGIN {
  if (t ~ /ms$/) { sub(/ms$/, "", t); print t + 0 } else { sub(/s$/, "", t); print t * 1000 } }')"
echo
echo "atip scan benchmark: $N canaries, $REPS reps, --timeout $TIMEOUT, $(nproc) cores"
echo "binary: $ATIP${SCAN_EXTRA:+ (extra scan args: $SCAN_EXTRA)}"
printf '%-46s %-22s %s\n' "measure" "value" "target"
printf '%-46s %-22s %s\n' "----------------------------------------------" "----------------------" "----------"
printf '%-46s %-22s %s\n' "cold scan, clean tree (min / median ms)" "$(stats "${cold_clean[@]}")" "<= 150"
printf '%-46s %-22s %s\n' "warm rescan, clean tree (min / median ms)" "$(stats "${warm[@]}")" "<= 10"
printf '%-46s %-22s %s\n' "  processes spawned by a warm rescan" "$warm_execs" "0"
printf '%-46s %-22s %s\n' "  tree files opened by a warm rescan" "$warm_opens" "0"
printf '%-46s %-22s %s\n' "cold scan, hostile tree (min / median ms)" "$(stats "${cold_hostile[@]}")" "<= $((timeout_ms + 500))"
printf '%-46s %-22s %s\n' "  processes left after it (max over reps)" "$(printf '%s\n' "${left[@]}" | sort -n | tail -n 1)" "0"
printf '%-46s %-22s %s\n' "cold scan, hostile tree, hostile-* allowlisted" "$(stats "${cold_allowed[@]}")" "<= $((timeout_ms + 500))"
printf '%-46s %-22s %s\n' "  processes left after it (max over reps)" "$(printf '%s\n' "${left_allowed[@]}" | sort -n | tail -n 1)" "0"
printf '%-46s %-22s %s\n' "peak RSS, clean cold scan" "$(mb "$rss_clean")" "<= 25 MB"
printf '%-46s %-22s %s\n' "peak RSS, hostile scan, allowlisted" "$(mb "$rss_hostile")" "< 64 MB"
printf '%-46s %-22s %s\n' "canary executions, clean tree (all runs)" "$(canaries "$WORK/clean" "${BASE_CLEAN:-0}")" "0"
printf '%-46s %-22s %s\n' "canary executions, hostile tree (all runs)" "$(canaries "$WORK/hostile" "${BASE_HOSTILE:-0}")" "0"
printf '%-46s %-22s %s\n' "tools registered: clean / hostile" "$clean_tools / $hostile_tools" ""
printf '%-46s %-22s %s\n' "exit codes: clean / warm / hostile / allowed" "$clean_rc / $warm_rc / $hostile_rc / $allowed_rc" ""
# Per-tool outcome of the hostile tools in the last hostile cold scan (best effort: the
# report's shape is documented in spec/scan.md; nothing here depends on it).
python3 - "$WORK/logs/allowed-cold-$REPS.json" 2>/dev/null <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))
s = r.get("summary", {})
print()
print("allowlisted hostile scan: " + ", ".join(f"{k} {v}" for k, v in s.items()))
rows = [(t.get("name"), "registered") for t in r.get("tools", [])]
rows += [(f.get("name"), f"failed: {f.get('reason')}") for f in r.get("failed", [])]
for name, what in sorted(r for r in rows if str(r[0]).startswith("hostile")):
    print(f"  {name:32} {what}")
PY
echo
echo "Processes left behind: probes' descendants still running in a probe's temp dir"
echo "(only one that escaped with setsid AND dropped its pipes is out of reach: spec/process.md)."
