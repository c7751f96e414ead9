#!/usr/bin/env bash
# Usage: detach.sh LOG COMMAND [ARG...]
# Starts COMMAND to outlive the caller: in its own session, stdin from /dev/null, stdout and
# stderr appended to LOG, and no other descriptor the caller had open. A daemon keeps what it
# inherits for its lifetime: a flock held around `make chaos` (or make's jobserver pipe)
# would stay held by dockerd and containerd long after the command that took it.
# Prints COMMAND's pid.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: detach.sh LOG COMMAND [ARG...]" >&2
  exit 64
fi
log=$1
shift
(
  # Everything above 2: the caller's locks and pipes, and bash's own script descriptor.
  for fd in /proc/"$BASHPID"/fd/*; do
    n=${fd##*/}
    if [ "$n" -gt 2 ]; then
      eval "exec $n>&-" 2>/dev/null || true
    fi
  done
  exec setsid "$@" >>"$log" 2>&1 </dev/null
) &
echo $!
