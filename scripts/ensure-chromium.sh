#!/usr/bin/env bash
# Makes sure a headless Chromium is present for the page tests (reports' browser tests check
# report.html and index.html in a real browser under the chaos tag, so `make test` runs them).
# Uses one found on PATH (chromium, chromium-browser, google-chrome); otherwise, as root on
# Debian (or a derivative), installs Debian's chromium package, as ensure-docker.sh does
# docker.io. Idempotent: a second run changes nothing.
set -euo pipefail

say() { printf 'ensure-chromium: %s\n' "$*" >&2; }
found() {
  local b
  for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then
      printf '%s\n' "$(command -v "$b")"
      return 0
    fi
  done
  return 1
}
can_install() { [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] && command -v apt-get >/dev/null 2>&1; }

if [ -n "${SPLITBRAIN_CHROMIUM:-}" ] && [ -x "$SPLITBRAIN_CHROMIUM" ]; then
  exit 0
fi
if found >/dev/null; then
  exit 0
fi
if ! can_install; then
  say "no chromium on PATH and this is not root on Debian, so splitbrain will not install one."
  say "Install Chromium (Debian: apt-get install chromium) or set SPLITBRAIN_CHROMIUM to its path."
  exit 1
fi
say "installing Debian's chromium package"
export DEBIAN_FRONTEND=noninteractive
# Without a fresh package list the install can ask for versions the mirror no longer has.
apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || {
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
}
say "chromium is at $(found)"
