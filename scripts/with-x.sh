#!/usr/bin/env bash
# Run a desktop program once the X display accepts connections (and the session bus is up, when there is one).
# supervisord has no dependencies between programs, only an order, so each X client waits for itself. A socket
# file is not enough: after Xvfb is killed its socket stays behind until the new server replaces it.
#   with-x.sh PROGRAM [ARGS...]        DISPLAY must be set
set -euo pipefail
bus=${DBUS_SESSION_BUS_ADDRESS:-}
bus=${bus#unix:path=}
for _ in $(seq 600); do
  if xset -display "$DISPLAY" q >/dev/null 2>&1 && { [[ -z $bus || $bus == *=* ]] || [[ -S $bus ]]; }; then
    exec "$@"
  fi
  sleep 0.05
done
echo "with-x.sh: display $DISPLAY (bus ${bus:-none}) not ready after 30 s, not starting $1" >&2
exit 1
