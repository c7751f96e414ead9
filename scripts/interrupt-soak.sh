#!/usr/bin/env bash
# Interrupt soak (issue 14): N real runs, each sent one SIGINT at a random moment (setup to
# teardown), then checked for leftovers (containers, networks, stopped processes), a
# complete history (newline-terminated, run-end last) and an honest verdict from
# `splitbrain check` (unknown, or invalid; never valid). Prints one line per run and a total.
# Usage: scripts/interrupt-soak.sh [N] [OUT_DIR]   (needs bin/splitbrain: make build)
set -u
N=${1:-20}
OUT=${2:-$(mktemp -d /tmp/splitbrain-soak.XXXXXX)}
BIN=${SPLITBRAIN:-$(dirname "$0")/../bin/splitbrain}
export TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=localhost
mkdir -p "$OUT"
MAX_DELAY=${MAX_DELAY:-34} # a run takes ~12 s of setup plus 4+10+4 s plus teardown here
fail=0; valid=0; left=0; incomplete=0
stopped_before=$(ps -eo stat= | grep -c '^T' || true)
printf '%-3s %-6s %-10s %-4s %-8s %-5s %s\n' i delay phase exit verdict left history
for i in $(seq 1 "$N"); do
  delay=$(awk -v s="$RANDOM" -v m="$MAX_DELAY" 'BEGIN{srand(s); printf "%.1f", rand()*m}')
  "$BIN" run --store redis --recipe redis-setnx --time 10s --warmup 4s --recovery 4s \
    --nemesis 'pause:target=leader,for=3s,every=4s' --out "$OUT" --name "soak-$i" --progress 5s \
    >"$OUT/soak-$i.out" 2>&1 &
  pid=$!
  sleep "$delay"
  kill -INT "$pid" 2>/dev/null && sent=1 || sent=0
  wait "$pid"; rc=$?
  dir=$(ls -d "$OUT"/soak-"$i"/2* 2>/dev/null | head -1)
  hist="$dir/history.jsonl"
  runid=$(sed -n 's/.*"run_id": *"\([^"]*\)".*/\1/p' "$dir/config.json" 2>/dev/null | head -1)
  # The phase the signal landed in: the last phase event the history had by then.
  phase=$(grep -o '"phase":"[a-z]*"' "$hist" 2>/dev/null | tail -1 | cut -d'"' -f4)
  [ "$sent" = 1 ] || phase="after-end"
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
  if [ "$verdict" = valid ] && [ "$sent" = 1 ]; then valid=$((valid+1)); fi
  if [ $((nc+nn)) -gt 0 ]; then left=$((left+nc+nn)); fi
  printf '%-3s %-6s %-10s %-4s %-8s %-5s %s\n' "$i" "$delay" "${phase:-none}" "$rc" "$verdict" "$nc/$nn" "$hok"
done
stopped_after=$(ps -eo stat= | grep -c '^T' || true)
chains=$(iptables -S 2>/dev/null | grep -c SPLITBRAIN || true)
echo "runs $N, leftover containers+networks $left, stopped processes before/after $stopped_before/$stopped_after, host SPLITBRAIN chains $chains, incomplete histories $incomplete, valid after a signal $valid"
echo "store: $OUT"
