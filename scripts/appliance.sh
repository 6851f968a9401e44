#!/usr/bin/env bash
# Start the whole appliance in the foreground under supervisord; Ctrl-C (or SIGTERM) stops everything.
# One entry point for `make run`, the Dockerfile's CMD, the e2e tests and bench/startup.py, so all four start
# the same thing. Every setting is an environment variable with a default (docs/operations.md).
#
# The user/permissions trap: the desktop session (Xfce, x11vnc) always runs as the desktop user; the three
# services (and Xvfb) run as that user too, so it must be able to read the code and execute the venv. That
# holds in the image (/opt/deskpilot) and for any checkout under /opt, /srv, /work or a 0755 home. A checkout
# under /root (0700) is not readable by it: then the services and Xvfb run as root (Xvfb must attach the
# desktop service's MIT-SHM segments), and this script says so on stderr. It checks by importing the package
# as that user, not by guessing from file modes.
#   scripts/appliance.sh                 start (exec supervisord)
#   scripts/appliance.sh --print-config  print the resolved settings and who would run the programs, then exit
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

export DESKPILOT_DISPLAY=${DESKPILOT_DISPLAY:-:0}
export DESKPILOT_HOST=${DESKPILOT_HOST:-127.0.0.1}
export DESKTOP_PORT=${DESKTOP_PORT:-9990}
export AGENT_PORT=${AGENT_PORT:-9991}
export UI_PORT=${UI_PORT:-9992}
export DESKTOP_VNC_PORT=${DESKTOP_VNC_PORT:-5900}
export DESKPILOT_USER=${DESKPILOT_USER:-user}
export DESKPILOT_STATE_DIR=${DESKPILOT_STATE_DIR:-/var/lib/deskpilot}
export DESKPILOT_RUN_DIR=${DESKPILOT_RUN_DIR:-/run/deskpilot}
export DESKPILOT_VENV=${DESKPILOT_VENV:-$here/.venv}
# SQLite in the state dir unless DATABASE_URL (which the agent prefers) points elsewhere, e.g. PostgreSQL
export AGENT_DATABASE_URL=${AGENT_DATABASE_URL:-sqlite+aiosqlite:///$DESKPILOT_STATE_DIR/agent.db}

log() { echo "deskpilot: $*" >&2; }

if ! getent passwd "$DESKPILOT_USER" >/dev/null; then
  log "the desktop user '$DESKPILOT_USER' does not exist: run scripts/install-system.sh (or make system) first"
  exit 1
fi
export DESKPILOT_HOME=${DESKPILOT_HOME:-$(getent passwd "$DESKPILOT_USER" | cut -d: -f6)}

# Who runs the services. supervisord can only switch users when it runs as root.
if [[ $(id -u) -ne 0 ]]; then
  log "run me as root (sudo make run): supervisord starts the programs as '$DESKPILOT_USER' itself"
  exit 1
elif (cd / && runuser -u "$DESKPILOT_USER" -- "$DESKPILOT_VENV/bin/python" -c 'import deskpilot' 2>/dev/null) \
  && runuser -u "$DESKPILOT_USER" -- test -r "$here/deskpilot/__init__.py"; then
  export DESKPILOT_SERVICE_USER=$DESKPILOT_USER
else
  export DESKPILOT_SERVICE_USER=root
  log "WARNING: user '$DESKPILOT_USER' cannot read $here or execute $DESKPILOT_VENV (a parent directory is"
  log "WARNING: not accessible to it, e.g. a checkout under /root). The services and Xvfb run as ROOT."
  log "WARNING: To run them as '$DESKPILOT_USER', clone the repository where it can read it (/opt, /srv, ...)."
fi

if [[ ${1:-} == --print-config ]]; then
  env | grep -E '^(DESKPILOT_|DESKTOP_PORT|DESKTOP_VNC_PORT|AGENT_PORT|AGENT_DATABASE_URL|UI_PORT)' | sort
  exit 0
fi

# Directories: the session's (bus socket, TMPDIR) belong to the desktop user, the state (agent database) to the
# services' user, the supervisor socket stays root's. with-x.sh is copied next to it, so the session can run it
# even from a checkout it cannot read. /tmp/.X11-unix may be missing in a fresh container.
desktop_user=(-o "$DESKPILOT_USER" -g "$(id -gn "$DESKPILOT_USER")")
install -d -m 1777 /tmp/.X11-unix
install -d -m 0755 "$DESKPILOT_RUN_DIR"
install -m 0755 "$here/scripts/with-x.sh" "$DESKPILOT_RUN_DIR/with-x.sh"
install -d -m 0700 "${desktop_user[@]}" "$DESKPILOT_RUN_DIR/session" "$DESKPILOT_RUN_DIR/session/tmp"
install -d -m 0755 -o "$DESKPILOT_SERVICE_USER" -g "$(id -gn "$DESKPILOT_SERVICE_USER")" "$DESKPILOT_STATE_DIR"

# The home layout, also on a fresh volume (Kubernetes does not copy the image's /home/user into one).
for d in "" Desktop Documents Downloads; do
  install -d "${desktop_user[@]}" "$DESKPILOT_HOME/$d"
done

# The home skeleton (desktop launchers, Xfce settings) is refreshed on every start: the appliance's own files
# are declarative; everything else in the home (a volume in the image) is left alone.
skel=$here/rootfs/home/user
while read -r d; do
  install -d "${desktop_user[@]}" "$DESKPILOT_HOME/$d"
done < <(cd "$skel" && find . -type d -printf '%P\n')
while read -r f mode; do
  install -m "$mode" "${desktop_user[@]}" "$skel/$f" "$DESKPILOT_HOME/$f"
done < <(cd "$skel" && find . -type f -printf '%P %m\n')

log "display $DESKPILOT_DISPLAY, desktop :$DESKTOP_PORT (live view /vnc), agent :$AGENT_PORT," \
  "UI :$UI_PORT on $DESKPILOT_HOST; session runs as $DESKPILOT_USER, services as $DESKPILOT_SERVICE_USER," \
  "home $DESKPILOT_HOME"
exec "$DESKPILOT_VENV/bin/supervisord" -c "$here/supervisord.conf"
