#!/usr/bin/env bash
# Run a program with exactly the environment in FILE, nothing of supervisord's own: FILE is the service's whole
# environment, written by scripts/appliance.sh (bash-quoted `export NAME=value` lines) and readable only by the
# user the service runs as.
#   with-env.sh FILE PROGRAM [ARGS...]
set -euo pipefail
file=$1
shift
while read -r name; do
  unset "$name" 2>/dev/null || true # a read-only variable of bash's own stays
done < <(compgen -e)
# shellcheck source=/dev/null
. "$file"
exec "$@"
