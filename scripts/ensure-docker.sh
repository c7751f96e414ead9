#!/usr/bin/env bash
# Makes sure a Docker engine answers. Uses a running engine as is; otherwise, as root on
# Debian, installs Debian's docker.io (+ debootstrap, iptables for image builds and faults)
# and starts dockerd with its address pools inside 198.18.0.0/15. Idempotent.
set -euo pipefail

# Docker's default pool for networks we do not size ourselves; our own run networks take
# explicit subnets from SPLITBRAIN_SUBNET_POOL (harness/platform), which must not overlap it.
DAEMON_POOL=${SPLITBRAIN_DAEMON_POOL:-198.18.0.0/16}
BRIDGE_IP=${SPLITBRAIN_BRIDGE_IP:-198.19.255.1/24}
LOG=${SPLITBRAIN_DOCKERD_LOG:-/var/log/splitbrain-dockerd.log}

say() { printf 'ensure-docker: %s\n' "$*" >&2; }

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && engine_answers; then
  exit 0
fi

if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ]; then
  say "no Docker engine answers (docker info failed) and this is not root on Debian,"
  say "so splitbrain will not install one. Install and start Docker Engine (API >= 1.40),"
  say "plus debootstrap and iptables, then run this again."
  exit 1
fi

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  say "starting dockerd (log: $LOG)"
  mkdir -p "$(dirname "$LOG")"
  # setsid: dockerd must outlive the make/CI step that started it.
  setsid dockerd \
    --default-address-pool "base=${DAEMON_POOL},size=24" \
    --bip "$BRIDGE_IP" \
    >>"$LOG" 2>&1 </dev/null &
fi

for _ in $(seq 1 60); do
  if engine_answers; then
    say "Docker engine is up: $(docker version --format '{{.Server.Version}}' 2>/dev/null)"
    exit 0
  fi
  sleep 1
done
say "dockerd did not answer within 60 s; last lines of $LOG:"
tail -n 20 "$LOG" >&2 || true
exit 1
