#!/usr/bin/env bash
# Python layer: a venv built from Debian's /usr/bin/python3 (a pyenv interpreter under /root could not be
# executed by the desktop user), with the exact versions of constraints.txt.
#   scripts/install-python.sh VENV_DIR [EXTRAS]     e.g. scripts/install-python.sh .venv server,test
#   scripts/install-python.sh --deps-only VENV_DIR  the image's venv: the server's dependencies alone (a layer
#                                                   that only pyproject.toml and constraints.txt invalidate),
#                                                   the checkout on the venv's path; no pip cache, no bytecode
#                                                   (scripts/precompile.py writes what is used), and none of
#                                                   what the appliance never runs (pip, test suites, C
#                                                   headers, LiteLLM's proxy admin UI, the AWS SDK, debug
#                                                   information)
set -euo pipefail
deps_only=
if [[ ${1:-} == --deps-only ]]; then
  deps_only=1
  shift
fi
venv=${1:?usage: install-python.sh [--deps-only] VENV_DIR [EXTRAS]}
extras=${2:-}
here=$(cd "$(dirname "$0")/.." && pwd)
pip=("$venv/bin/pip" install -q --disable-pip-version-check)

[[ -x "$venv/bin/python" ]] || /usr/bin/python3 -m venv "$venv"
if [[ -n $deps_only ]]; then
  # the base dependencies of pyproject.toml (the client) and its `server` extra, read by the venv's own
  # interpreter
  read_deps='import sys, tomllib; p = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("\n".join(p["dependencies"] + p["optional-dependencies"]["server"]))'
  "$venv/bin/python" -c "$read_deps" "$here/pyproject.toml" >"$venv/requirements.txt"
  "${pip[@]}" --no-cache-dir --no-compile -c "$here/constraints.txt" -r "$venv/requirements.txt"
  rm "$venv/requirements.txt"
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  echo "$here" >"$site/deskpilot.pth"
  # LiteLLM requires the AWS SDK (Bedrock, SageMaker, S3 logging) and Hugging Face's Xet transfer client, but
  # the appliance calls neither: its providers (deskpilot/config.py) and a LiteLLM proxy are plain HTTP. 46 MB.
  "$venv/bin/python" -m pip uninstall -q -y boto3 botocore s3transfer jmespath hf-xet
  "$venv/bin/python" -m pip uninstall -q -y pip setuptools
  find "$site" -depth -type d \( -name tests -o -name __pycache__ \) -exec rm -rf {} +
  # C headers, type stubs and the sources of compiled extensions: read by compilers and type checkers only
  find "$venv" -type f \( -name '*.h' -o -name '*.pyi' -o -name '*.pyx' -o -name '*.pxd' -o -name '*.pxi' \
    -o -name '*.c' -o -name '*.cpp' \) -delete
  rm -rf "$site/litellm/proxy/_experimental/out"
  # Debug information in extension modules (uvloop, asyncpg, aiohttp, ...: 42 MB). Only files without an
  # RPATH: the libraries auditwheel patched (*.libs/, and what links to them) no longer load once stripped.
  find "$site" -name '*.so*' -type f -not -path '*.libs/*' -print0 | while IFS= read -r -d '' so; do
    readelf -d "$so" | grep -qE 'RPATH|RUNPATH' || strip --strip-debug "$so"
  done
  exit 0
fi
"${pip[@]}" --upgrade pip
spec="$here"
[[ -n "$extras" ]] && spec="${here}[${extras}]"
"${pip[@]}" -c "$here/constraints.txt" -e "$spec"
