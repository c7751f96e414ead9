#!/usr/bin/env bash
# Interrupt soak (issue 14): N real runs, each sent one SIGINT at a random moment (setup to
# teardown), then checked for leftovers (containers, networks, stopped processes), a
# complete history (newline-terminated, run-end last) and an honest verdict from
# `splitbrain check` (unknown, or invalid; never valid). Prints one line per run and a total.
# Usage: [MIN_DELAY=s] [MAX_DELAY=s] scripts/interrupt-soak.sh [N] [OUT_DIR]
# (needs bin/splitbrain: make build)
set -u
N=${1:-20}
OUT=${2:-$(mktemp -d /tmp/splitbrain-soak.XXXXXX)}
BIN=${SPLITBRAIN:-$(dirname "$0")/../bin/splitbrain}
export TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=localhost
mkdir -p "$OUT"
# The signal lands MIN_DELAY..MAX_DELAY s after the start; a run here takes 10-30 s of setup
# (more under load), 4+10+4 s of timed phases, then teardown.
MIN_DELAY=${MIN_DELAY:-0}
MAX_DELAY=${MAX_DELAY:-50}
# phase_of HISTORY: the phase the signal landed in, i.e. the last phase before finish's own
# heal and teardown ("teardown" when run-end says so, "after-end" when it missed the run).
phase_of() {
  python3 -c '
import json, sys
try:
    evs = [json.loads(l) for l in open(sys.argv[1])]
except Exception:
    print("no-history"); sys.exit()
ph = [e["phase"] for e in evs if e["kind"] == "phase"]
end = evs[-1] if evs else {}
reason = end.get("reason", "") if end.get("kind") == "run-end" else None
if reason is None: print("no-run-end")
elif reason == "": print("after-end")
elif "during teardown" in reason: print("teardown")
else:
    if ph and ph[-1] == "teardown": ph.pop()
    if ph and ph[-1] == "heal": ph.pop()
    print(ph[-1] if ph else "setup")
' "$1"
}
fail=0; valid=0; left=0; incomplete=0
stopped_before=$(ps -eo stat= | grep -c '^T' || true)
printf '%-3s %-6s %-10s %-4s %-8s %-5s %s\n' i delay phase exit verdict left history
for i in $(seq 1 "$N"); do
  delay=$(awk -v s="$RANDOM" -v lo="$MIN_DELAY" -v hi="$MAX_DELAY" 'BEGIN{srand(s); printf "%.1f", lo+rand()*(hi-lo)}')
  "$BIN" run --store redis --recipe redis-setnx --time 10s --warmup 4s --recovery 4s \
    --nemesis 'pause:target=leader,for=3s,every=4s' --out "$OUT" --name "soak-$i" --progress 5s \
    >"$OUT/soak-$i.out" 2>&1 &
  pid=$!
  sleep "$delay"
  kill -INT "$pid" 2>/dev/null
  wait "$pid"; rc=$?
  dir=$(ls -d "$OUT"/soak-"$i"/2* 2>/dev/null | head -1)
  hist="$dir/history.jsonl"
  runid=$(sed -n 's/.*"run_id": *"\([^"]*\)".*/\1/p' "$dir/config.json" 2>/dev/null | head -1)
  phase=$(phase_of "$hist")
  nc=0; nn=0
  if [ -n "$runid" ]; then
    nc=$(docker ps -aq --filter "label=io.splitbrain.run=$runid" | wc -l)
    nn=$(docker network ls -q --filter "label=io.splitbrain.run=$runid" | wc -l)
  fi
  hok=ok
  if [ ! -s "$hist" ] || [ "$(tail -c1 "$hist" | od -An -c | tr -d ' ')" != '\n' ] || ! tail -1 "$hist" | grep -q '"kind":"run-end"'; then
    hok=INCOMPLETE; incomplete=$((incomplete+1))
  fi
  "$BIN" check "$dir" >"$OUT/soak-$i.check" 2>&1; crc=$?
  case $crc in 0) verdict=valid;; 1) verdict=invalid;; 2) verdict=unknown;; *) verdict="err$crc";; esac
  if [ "$verdict" = valid ] && [ "$phase" != after-end ]; then valid=$((valid+1)); fi
  left=$((left+nc+nn))
  printf '%-3s %-6s %-10s %-4s %-8s %-5s %s\n' "$i" "$delay" "$phase" "$rc" "$verdict" "$nc/$nn" "$hok"
done
stopped_after=$(ps -eo stat= | grep -c '^T' || true)
chains=$(iptables -S 2>/dev/null | grep -c SPLITBRAIN || true)
echo "runs $N, leftover containers+networks $left, stopped processes before/after $stopped_before/$stopped_after, host SPLITBRAIN chains $chains, incomplete histories $incomplete, valid after a signal $valid"
echo "store: $OUT"
