#!/usr/bin/env bash
# Makes sure a Docker engine answers and the tools for offline image builds are present.
# Uses a running engine as is; otherwise, as root on Debian (or a derivative), installs
# Debian's docker.io and starts dockerd with its address pools inside 198.18.0.0/15.
# Idempotent: a second run changes nothing.
set -euo pipefail

# Docker's default pool for networks we do not size ourselves; our own run networks take
# explicit subnets from SPLITBRAIN_SUBNET_POOL (internal/platform), which must not overlap it.
DAEMON_POOL=${SPLITBRAIN_DAEMON_POOL:-198.18.0.0/16}
BRIDGE_IP=${SPLITBRAIN_BRIDGE_IP:-198.19.255.1/24}
LOG=${SPLITBRAIN_DOCKERD_LOG:-/var/log/splitbrain-dockerd.log}

say() { printf 'ensure-docker: %s\n' "$*" >&2; }
engine_answers() { command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; }
can_install() { [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] && command -v apt-get >/dev/null 2>&1; }

need=()
engine_answers || command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
# The local image profile debootstraps a Debian base and applies faults with iptables.
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
# The dynamodb image's dynalite tree is installed with npm (from its own configuration).
command -v npm >/dev/null 2>&1 || need+=(npm)
# debootstrap verifies bookworm's Release file with Debian's key (absent on e.g. Ubuntu).
[ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || need+=(debian-archive-keyring)

if [ ${#need[@]} -gt 0 ]; then
  if can_install; then
    say "installing ${need[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  elif engine_answers; then
    say "warning: missing ${need[*]}; building local images will fail unless they exist already"
  fi
fi

if engine_answers; then
  exit 0
fi

if ! can_install; then
  say "no Docker engine answers (docker info failed) and this is not root on Debian, so"
  say "splitbrain will not install one. Install and start Docker Engine (API >= 1.40), plus"
  say "debootstrap, debian-archive-keyring and iptables, then run this again."
  exit 1
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  say "starting dockerd (log: $LOG)"
  mkdir -p "$(dirname "$LOG")"
  # dockerd must outlive the make/CI step that started it, holding none of its descriptors.
  bash "$(dirname "$0")/detach.sh" "$LOG" dockerd \
    --default-address-pool "base=${DAEMON_POOL},size=24" \
    --bip "$BRIDGE_IP" >/dev/null
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
