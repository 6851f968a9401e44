#!/usr/bin/env bash
# Run a desktop program once the X display accepts connections (and the session bus is up, when there is one).
# supervisord has no dependencies between programs, only an order, so each X client waits for itself. A socket
# file is not enough: after Xvfb is killed its socket stays behind until the new server replaces it. With
# DESKPILOT_XVFB_USER set, the server must also be the appliance's own: another Xvfb that grabbed the display
# number first (a test suite's, say) is owned by someone else, and this waits until ours has it.
#   with-x.sh PROGRAM [ARGS...]        DISPLAY must be set
set -euo pipefail
bus=${DBUS_SESSION_BUS_ADDRESS:-}
bus=${bus#unix:path=}
number=${DISPLAY#*:}
socket=/tmp/.X11-unix/X${number%%.*}
ours() { [[ -z ${DESKPILOT_XVFB_USER:-} ]] || [[ $(stat -c %U "$socket" 2>/dev/null) == "$DESKPILOT_XVFB_USER" ]]; }
for _ in $(seq 600); do
  if xdotool getdisplaygeometry >/dev/null 2>&1 && ours && { [[ -z $bus || $bus == *=* ]] || [[ -S $bus ]]; }; then
    exec "$@"
  fi
  sleep 0.05
done
echo "with-x.sh: display $DISPLAY (bus ${bus:-none}) not ready after 30 s, not starting $1" >&2
exit 1
