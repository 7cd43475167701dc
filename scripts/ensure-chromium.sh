#!/usr/bin/env bash
# Chromium for web recipes and the end-to-end tests: the system package where the
# distribution has one (apt), else Playwright's own build. Does nothing when present.
set -euo pipefail
for candidate in "${RYSH_CHROMIUM:-}" chromium chromium-browser; do
  if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1; then exit 0; fi
done
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing Chromium with apt-get (once)..."
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
else
  echo "no apt-get: installing Playwright's Chromium..."
  "${1:-.venv/bin/python}" -m playwright install chromium
fi
