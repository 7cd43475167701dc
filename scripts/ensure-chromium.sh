#!/usr/bin/env bash
# Chromium for web recipes and the end-to-end tests, and ffmpeg for `record: true` videos:
# the system packages where the distribution has them (apt), else Playwright's own builds.
# Does nothing for what is already there.
set -euo pipefail
PY="${1:-.venv/bin/python}"
have_chromium() {
  for candidate in "${RYSH_CHROMIUM:-}" chromium chromium-browser; do
    if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1; then return 0; fi
  done
  return 1
}
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  missing=""
  have_chromium || missing="chromium fonts-dejavu-core"
  command -v ffmpeg >/dev/null 2>&1 || missing="$missing ffmpeg"
  command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"  # the sandbox of coding agents' commands
  if [ -n "$missing" ]; then
    echo "installing with apt-get (once):$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
  # Playwright records video with an ffmpeg it looks for at a fixed place; the system's serves.
  revision=$("$PY" - <<'PYEOF'
import json, pathlib, playwright
data = json.loads((pathlib.Path(playwright.__file__).parent / "driver/package/browsers.json").read_text())
print(next(b["revision"] for b in data["browsers"] if b["name"] == "ffmpeg"))
PYEOF
)
  target="${PLAYWRIGHT_BROWSERS_PATH:-$HOME/.cache/ms-playwright}/ffmpeg-$revision/ffmpeg-linux"
  if [ ! -e "$target" ] && command -v ffmpeg >/dev/null 2>&1; then
    mkdir -p "$(dirname "$target")"
    ln -sf "$(command -v ffmpeg)" "$target"
  fi
else
  have_chromium || { echo "no apt-get: installing Playwright's Chromium..."; "$PY" -m playwright install chromium; }
  "$PY" -m playwright install ffmpeg
fi
