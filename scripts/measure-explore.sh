#!/usr/bin/env bash
# Usage: scripts/measure-explore.sh ENTRY SEED [BUDGET] [buggy|fixed]
# Measures issue 36's done-when for one bug: `splitbrain explore` with no schedule given,
# guided and random side by side (the same flags and seed, both searches at the same time so
# they see the same load), each stopping at its first find or after BUDGET (default 15m).
# The fixed variant is searched guided only (it must never be flagged): in the slot the first
# buggy search to end frees, until the other ends, or alone with the argument "fixed".
# ENTRY is an examples/bugs entry (built with -tags buggy for the buggy variant) or
# redis-setnx (the project's own zombie recipe). Logs go to measure/explore/; the last lines
# printed are the figures: runs and minutes until the find, or the runs of a miss.
# Environment: RESOURCE=fenced runs the searches on the fenced resource instead of the row's
# (for a fixed variant: the check-then-send window closed); MODES="guided" or "random" runs
# one buggy search alone; TIME sets --time (default 30s).
# An invalid find's "late writes" line says whether it was the check-then-send window only.
# Needs bin/splitbrain (make build) and the images; run from the repository root.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: scripts/measure-explore.sh ENTRY SEED [BUDGET] [buggy|fixed]" >&2
  exit 64
fi
entry=$1 seed=$2 budget=${3:-15m} variant=${4:-buggy}
resource=(--resource unfenced)
run=()
warmup=8s
case $entry in
  zk-suspended | zk-predecessor) store=zookeeper ;;
  redis-del-unowned) store=redis ;;
  pg-advisory-unchecked) store=postgres ;;
  dynamodb-wallclock) store=dynamodb ;;
  etcd-session-done) store=etcd ;;
  etcd-lock-unfenced) store=etcd resource=() ;; # its row's resource: fenced (every holder sends token 1)
  # its row's TTL (the killed servers must be back within the holder's validity: restarting
  # all five took up to 7 s at load 30) and warmup (the fixed variant keeps fresh servers out
  # for TTL + 1 s; warmup ends on a leader's writes, this is its timeout); --time 12xTTL as
  # the others' 30 s is 15xTTL
  redlock-restart) store=redis-multi run=(--ttl 10s --time 120s) warmup=30s ;;
  redis-setnx) store=redis ;;
  *)
    echo "unknown entry $entry: give an examples/bugs entry or redis-setnx" >&2
    exit 64
    ;;
esac
case ${RESOURCE:-} in
  "") ;;
  fenced | unfenced) resource=(--resource "$RESOURCE") ;;
  *)
    echo "RESOURCE=$RESOURCE: want fenced or unfenced" >&2
    exit 64
    ;;
esac
case $variant in buggy | fixed) ;; *)
  echo "variant $variant: want buggy or fixed" >&2
  exit 64
  ;;
esac
mkdir -p measure/explore
export SPLITBRAIN_STORE_DIR=${SPLITBRAIN_STORE_DIR:-$PWD/store}
who=(--recipe redis-setnx)
if [ "$entry" != redis-setnx ]; then
  CGO_ENABLED=0 go build -tags buggy -o /tmp/measure-explore-$entry-buggy ./examples/bugs/"$entry"
  CGO_ENABLED=0 go build -o /tmp/measure-explore-$entry-fixed ./examples/bugs/"$entry"
fi
stamp=$(date -u +%Y%m%dT%H%M)
logs=()
# search MODE VARIANT BINARY: starts one search in the background; its pid is in $!.
search() {
  local mode=$1 var=$2 cand=("${who[@]}")
  [ "$entry" != redis-setnx ] && cand=(--candidate-cmd /tmp/measure-explore-$entry-$var)
  log=measure/explore/$entry-$var-s$seed-$mode${RESOURCE:+-$RESOURCE}-$stamp.log
  logs+=("$log")
  {
    echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# bin/splitbrain explore --store $store ${cand[*]} ${resource[*]} --time ${TIME:-30s} ${run[*]} --mode $mode --seed $seed --warmup $warmup --recovery 5s --budget $budget --shrink-budget 0 --repro 0"
  } >"$log"
  bin/splitbrain explore --store "$store" "${cand[@]}" "${resource[@]}" --time "${TIME:-30s}" "${run[@]}" \
    --name "explore-$entry-$var-$mode-s$seed" --mode "$mode" --seed "$seed" --warmup "$warmup" --recovery 5s \
    --budget "$budget" --shrink-budget 0 --repro 0 >>"$log" 2>&1 &
}
if [ "$variant" = fixed ]; then
  search guided fixed
  wait $! || true
elif [ -n "${MODES:-}" ]; then
  case $MODES in guided | random) ;; *)
    echo "MODES=$MODES: want guided or random" >&2
    exit 64
    ;;
  esac
  search "$MODES" buggy
  wait $! || true
else
  # The buggy searches side by side; the slot the first of them frees runs the fixed variant
  # (guided) until the other ends, so at most two searches run at once.
  search guided buggy
  g=$!
  search random buggy
  r=$!
  wait -n "$g" "$r" || true
  f=
  if [ "$entry" != redis-setnx ]; then
    search guided fixed
    f=$!
  fi
  wait "$g" "$r" 2>/dev/null || true
  if [ -n "$f" ]; then
    kill -TERM "$f" 2>/dev/null || true # the running try heals and tears down
    wait "$f" || true
  fi
fi
for log in "${logs[@]}"; do
  echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log"
  python3 - "$log" <<'EOF'
import re, sys
def secs(d):
    t = 0.0
    for n, u in re.findall(r'([\d.]+)(h|ms|m|s)', d):
        t += float(n) * {'h': 3600, 'm': 60, 's': 1, 'ms': 0.001}[u]
    return t
log = sys.argv[1]
text = open(log).read()
starts = {int(n): secs(d) for n, d in re.findall(r'^try (\d+) \((\S+) elapsed\)', text, re.M)}
ends = {int(n): (v, secs(d)) for n, v, d in re.findall(r'^try (\d+): (.*?) \((\S+), \d+ nodes\)', text, re.M)}
summary = re.search(r'^explored: .*$', text, re.M)
found = re.search(r'^VIOLATION in try (\d+): (.*)$', text, re.M)
late = re.search(r'^VIOLATION in try .*?^  late writes, (.*?)$', text, re.M | re.S)
name = log.rsplit('/', 1)[-1]
if found:
    n = int(found.group(1))
    what = f"; late writes, {late.group(1)}" if late else ""
    print(f"{name}: FOUND in run {n} at {(starts[n] + ends[n][1]) / 60:.1f} min ({found.group(2)}{what})")
else:
    print(f"{name}: not found; {summary.group(0) if summary else 'no summary (search failed: see the log)'}")
EOF
done
