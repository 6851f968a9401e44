#!/usr/bin/env bash
# Python layer: a venv built from Debian's /usr/bin/python3 (a pyenv interpreter under /root could not be
# executed by the desktop user), with the exact versions of constraints.txt.
#   scripts/install-python.sh VENV_DIR [EXTRAS]     e.g. scripts/install-python.sh .venv test
set -euo pipefail
venv=${1:?usage: install-python.sh VENV_DIR [EXTRAS]}
extras=${2:-}
here=$(cd "$(dirname "$0")/.." && pwd)

[[ -x "$venv/bin/python" ]] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip
spec="$here"
[[ -n "$extras" ]] && spec="${here}[${extras}]"
"$venv/bin/pip" install -q --disable-pip-version-check -c "$here/constraints.txt" -e "$spec"
