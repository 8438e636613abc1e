#!/usr/bin/env bash
# Idempotent bootstrap: system packages (Xvfb, the X/GL libraries Qt and VTK need, the pinned UI font,
# Tesseract for the OCR legibility test), then .venv holding exactly the Python packages pinned with hashes
# in requirements.lock, plus the project itself in editable mode. Safe to run again; skips work already done.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  xvfb xauth x11-utils xdotool
  libgl1 libegl1 libglx-mesa0 libgl1-mesa-dri libglu1-mesa libosmesa6
  libx11-6 libx11-xcb1 libxext6 libxrender1 libxi6 libxtst6 libxt6 libxkbcommon0 libxkbcommon-x11-0
  libxcb1 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render0
  libxcb-render-util0 libxcb-shape0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxcb-xinerama0 libxcb-xkb1
  libxcb-glx0 libxcb-util1 libdbus-1-3 libfontconfig1 libfreetype6 fonts-dejavu-core
  tesseract-ocr tesseract-ocr-eng
  python3-venv  # `python3 -m venv` on a plain Debian 12 whose python3 is the system one
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "bootstrap: installing system packages: ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
[ -f requirements.lock ] || { echo "bootstrap: requirements.lock is missing" >&2; exit 1; }
# .venv is exactly requirements.lock. Every package, pip and setuptools included, comes from the lock,
# checked against its sha256; the project is then built with the locked setuptools (no build isolation)
# and installs no dependency of its own. .venv is deleted and made again whenever the lock, pyproject.toml
# or the interpreter changed since the last finished bootstrap, or when what is installed in it no longer
# equals the lock (a package upgraded or added by hand), so nothing else survives.
drift() {  # what differs between .venv and the lock, one line; empty when they are equal
  .venv/bin/python -E -s - 2>/dev/null <<'PYEOF' || echo "cannot compare"
from runner.lockfile import installed_mismatches, read_lock, unlocked_installed
lock = read_lock("requirements.lock")
diff = [f"{n} {have or 'missing'}, locked {want}" for n, want, have in installed_mismatches(lock)]
diff += [f"{n} {have}, not locked" for n, have in unlocked_installed(lock)]
print("; ".join(diff))
PYEOF
}
stamp=.venv/.bootstrap-stamp
want=$({ cat pyproject.toml requirements.lock; "$PY" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)
why=""
if [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  why="creating .venv from requirements.lock"
elif d=$(drift) && [ -n "$d" ]; then
  why=".venv differs from requirements.lock ($d); creating it anew"
fi
if [ -n "$why" ]; then
  "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
    || echo "bootstrap: warning: requirements.lock is for Python 3.11, $PY is $("$PY" -V 2>&1)" >&2
  echo "bootstrap: $why"
  rm -rf .venv
  "$PY" -m venv .venv
  # uv installs the lock in seconds (pip took 3-4 minutes of a fresh clone's `make test`), checking every
  # hash as pip does. uv itself comes from the lock through pip (one wheel). Should uv fail (say, a machine
  # whose only package source is pip's configured mirror), pip installs the lock as before.
  uv_req=$(mktemp); trap 'rm -f "$uv_req"' EXIT
  awk '/^uv==/{p=1} p{print; if ($0 !~ /\\$/) exit}' requirements.lock > "$uv_req"
  if [ -s "$uv_req" ] && .venv/bin/python -m pip install -q --require-hashes --no-deps -r "$uv_req" \
      && .venv/bin/uv pip install -q --python .venv/bin/python --require-hashes --no-deps -r requirements.lock; then
    :
  else
    echo "bootstrap: uv could not install the lock; installing it with pip" >&2
    # A download cut short fails its hash check (seen once for a 79 MB wheel): try again, then once more without
    # pip's cache, so a truncated file kept there cannot fail every later try. The hashes are still checked.
    .venv/bin/python -m pip install -q --require-hashes --no-deps -r requirements.lock \
      || { echo "bootstrap: pip install failed; trying again" >&2; .venv/bin/python -m pip install -q --require-hashes --no-deps -r requirements.lock; } \
      || { echo "bootstrap: trying again without pip's cache" >&2; .venv/bin/python -m pip install -q --no-cache-dir --require-hashes --no-deps -r requirements.lock; }
  fi
  .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
  .venv/bin/python -m pip check >/dev/null || { .venv/bin/python -m pip check; exit 1; }
  d=$(drift); [ -z "$d" ] || { echo "bootstrap: .venv still differs from requirements.lock: $d" >&2; exit 1; }
  # site-packages changes only here, so its bytecode is written here. Some packages ship deliberately
  # unparsable files (templates, test data): compileall reports them and compiles the rest, so its
  # exit code says nothing.
  .venv/bin/python -m compileall -q -j 0 "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    >/dev/null 2>&1 || true
  echo "$want" > "$stamp"
fi
# Bytecode for the project, written on every run: with PYTHONDONTWRITEBYTECODE set (or a read-only
# tree) every console launch would otherwise recompile the project's modules (80-160 ms). compileall
# writes .pyc whatever that variable says and skips files already up to date, so this is cheap on reruns.
.venv/bin/python -m compileall -q -j 0 consoles rendering runner scoring tasks
echo "bootstrap: ready (.venv/bin/medimageos)"
