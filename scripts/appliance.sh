#!/usr/bin/env bash
# Start the whole appliance in the foreground under supervisord; Ctrl-C (or SIGTERM) stops everything.
# One entry point for `make run`, the Dockerfile's CMD, the e2e tests and bench/startup.py, so all four start
# the same thing. Every setting is an environment variable with a default (docs/operations.md).
#
# Who runs what. Three users, none of which can signal, trace or read another's processes:
# - the desktop user (DESKPILOT_USER) runs the session (Xfce, the applications) and its worker (hands), which
#   does what needs that user's rights for the desktop service: files, programs, commands, the home's reset;
# - the display's owner (DESKPILOT_DISPLAY_USER) runs Xvfb, x11vnc (on a Unix socket in a directory only it
#   enters) and the desktop service, which drives the display and holds the X cookie, no token;
# - DESKPILOT_TASKS_USER runs the task service (the agent loop, its provider keys, its database) and the UI,
#   which hold the token; they reach the desktop with a credential of its own (the desktop credential), so
#   nothing on the desktop side ever sees the token that opens the task API.
# Each must read the code and execute the venv; this script checks that by importing the package as that
# user, not by guessing from file modes. A checkout under /root (0700) fails the check: then that user's
# programs run as root (with the rights they need dropped), and this script says so on stderr.
#
# Each program gets only its own variables. supervisord starts with the session's variables and the settings
# supervisord.conf names, nothing else; each service gets its whole environment from a file written here into
# the run directory, readable only by the user it runs as (with-env.sh). The token reaches the task service
# and the UI; the desktop service gets its SHA-256 digest; the session and its applications get neither.
#   scripts/appliance.sh                 start (exec supervisord)
#   scripts/appliance.sh --print-config  print the resolved settings, who would run the programs and where the
#                                        token would come from (no secret), then exit
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin # runuser, for a caller whose PATH lacks them (cron, env -i)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The directory the package is imported from: the checkout itself, or site-packages when this is the installed
# package's copy (deskpilot/_appliance, which setup.py lays out as the checkout; `deskpilot up` runs it).
code=$here
[[ -f $code/deskpilot/__init__.py ]] || code=$(cd "$here/../.." && pwd)

export DESKPILOT_DISPLAY=${DESKPILOT_DISPLAY:-:0}
export DESKPILOT_HOST=${DESKPILOT_HOST:-127.0.0.1}
export DESKTOP_PORT=${DESKTOP_PORT:-9990}
# (the task service's variables and its user were AGENT_* and DESKPILOT_AGENT_USER in 0.1: read in 0.2 too)
export TASKS_PORT=${TASKS_PORT:-${AGENT_PORT:-9991}}
export UI_PORT=${UI_PORT:-9992}
export DESKPILOT_USER=${DESKPILOT_USER:-user}
export DESKPILOT_TASKS_USER=${DESKPILOT_TASKS_USER:-${DESKPILOT_AGENT_USER:-deskpilot}}
export DESKPILOT_DISPLAY_USER=${DESKPILOT_DISPLAY_USER:-deskpilot-display}
export DESKPILOT_STATE_DIR=${DESKPILOT_STATE_DIR:-/var/lib/deskpilot}
export DESKPILOT_RUN_DIR=${DESKPILOT_RUN_DIR:-/run/deskpilot}
export DESKPILOT_VENV=${DESKPILOT_VENV:-$here/.venv}
# the services started with the appliance (the desktop's always is); the others start on demand (supervisorctl)
export DESKPILOT_SERVICES=${DESKPILOT_SERVICES:-desktop tasks ui}
# SQLite in the state dir unless DATABASE_URL (which the task service prefers) points elsewhere, e.g. PostgreSQL
export TASKS_DATABASE_URL=${TASKS_DATABASE_URL:-${AGENT_DATABASE_URL:-sqlite+aiosqlite:///$DESKPILOT_STATE_DIR/agent.db}}
# what POST /reset brings the home back to: this copy's skeleton, wherever the package is installed
export DESKTOP_SKELETON=${DESKTOP_SKELETON:-$here/rootfs/home/user}

log() { echo "deskpilot: $*" >&2; }
fail() {
  log "$*"
  exit 1
}

for u in "$DESKPILOT_USER" "$DESKPILOT_TASKS_USER" "$DESKPILOT_DISPLAY_USER"; do
  getent passwd "$u" >/dev/null \
    || fail "the user '$u' does not exist: run scripts/install-system.sh (or make system) first"
done
export DESKPILOT_HOME=${DESKPILOT_HOME:-$(getent passwd "$DESKPILOT_USER" | cut -d: -f6)}
[[ $(id -u) -eq 0 ]] || fail "run me as root (sudo make run): supervisord starts each program as its own user"

# The user a service runs as: $1, or root when $1 cannot import the package from this checkout.
runs_as() {
  if (cd / && runuser -u "$1" -- "$DESKPILOT_VENV/bin/python" -c 'import deskpilot' 2>/dev/null) \
    && runuser -u "$1" -- test -r "$code/deskpilot/__init__.py" -a -r "$here/supervisord.conf"; then
    echo "$1"
  else
    echo root
  fi
}
DESKPILOT_START_TASKS=false DESKPILOT_START_UI=false
# shellcheck disable=SC2034 # read by name where supervisord's environment is made (conf_env)
for service in $DESKPILOT_SERVICES; do
  case $service in
    desktop) ;;
    tasks) DESKPILOT_START_TASKS=true ;;
    ui) DESKPILOT_START_UI=true ;;
    *) fail "DESKPILOT_SERVICES: no service '$service' (desktop, tasks, ui)" ;;
  esac
done
DESKPILOT_DESKTOP_RUNS_AS=$(runs_as "$DESKPILOT_DISPLAY_USER")
DESKPILOT_HANDS_RUNS_AS=$(runs_as "$DESKPILOT_USER")
DESKPILOT_TASKS_RUNS_AS=$(runs_as "$DESKPILOT_TASKS_USER")
who='' what=''
if [[ $DESKPILOT_USER != root && $DESKPILOT_HANDS_RUNS_AS == root ]]; then
  who="'$DESKPILOT_USER'" what="the desktop user's worker"
fi
if [[ $DESKPILOT_DISPLAY_USER != root && $DESKPILOT_DESKTOP_RUNS_AS == root ]]; then
  who="${who:+$who and }'$DESKPILOT_DISPLAY_USER'" what="${what:+$what, }the desktop service, Xvfb and x11vnc"
fi
if [[ $DESKPILOT_TASKS_USER != root && $DESKPILOT_TASKS_RUNS_AS == root ]]; then
  who="${who:+$who and }'$DESKPILOT_TASKS_USER'" what="${what:+$what, }the task service and the UI"
fi
if [[ -n $who ]]; then
  log "WARNING: $who cannot read $here or execute $DESKPILOT_VENV (a parent directory is not accessible,"
  log "WARNING: e.g. a checkout under /root): $what run as ROOT (the session still runs as '$DESKPILOT_USER')."
  log "WARNING: To run them as $who, clone the repository where they can read it (/opt, /srv, ...)."
fi

# The token: given, generated (when the services listen beyond loopback), none (loopback only) or off.
token_file=$DESKPILOT_STATE_DIR/token
case ${DESKPILOT_AUTH:-on} in
  off) token_source="off" ;;
  on)
    if [[ -n ${DESKPILOT_TOKEN:-} ]]; then
      token_source="environment"
    elif [[ -n ${DESKPILOT_TOKEN_SHA256:-} ]]; then
      fail "DESKPILOT_TOKEN_SHA256 alone is for a desktop service run on its own:" \
        "the appliance needs DESKPILOT_TOKEN (its UI signs sessions with it)"
    else
      case $DESKPILOT_HOST in
        127.0.0.1 | localhost | ::1 | '[::1]') token_source="none" ;;
        *) token_source="file" ;;
      esac
    fi
    ;;
  *) fail "DESKPILOT_AUTH must be on or off, not '$DESKPILOT_AUTH'" ;;
esac
case $token_source in
  off)
    log "WARNING: DESKPILOT_AUTH=off: no service requires a token;" \
      "whoever reaches the ports on $DESKPILOT_HOST can use the desktop"
    ;;
  none) log "no token: anyone on this machine can use the desktop; set DESKPILOT_TOKEN to require one" ;;
esac

if [[ ${1:-} == --print-config ]]; then
  for name in DESKPILOT_DISPLAY DESKPILOT_HOST DESKPILOT_USER DESKPILOT_TASKS_USER DESKPILOT_DISPLAY_USER \
    DESKPILOT_HOME DESKPILOT_STATE_DIR DESKPILOT_RUN_DIR DESKPILOT_VENV DESKPILOT_DESKTOP_RUNS_AS \
    DESKPILOT_HANDS_RUNS_AS DESKPILOT_TASKS_RUNS_AS DESKTOP_PORT TASKS_PORT UI_PORT TASKS_DATABASE_URL \
    DESKPILOT_SERVICES; do
    echo "$name=${!name}"
  done | sed -E 's#(://[^/:@]+:)[^/@]*@#\1***@#' # a database URL's password
  echo "DESKPILOT_TOKEN_SOURCE=$token_source"
  exit 0
fi

# ------------------------------------------------------------------------------------------------ directories
# The session's (bus socket, TMPDIR) belong to the desktop user, the display's (its X authority, x11vnc's
# socket, the desktop service's home) to its owner alone, the state (database, token) to the task service's
# user alone (0700); the worker's socket directory is the desktop user's (the worker serves the desktop
# service's user only, by its peer credentials). The run directory, with the supervisor socket, the session's X
# authority and the programs' environment files, is root's (each file its reader's). The wrappers are copied
# there, so their users can run them even from a checkout they cannot read. /tmp/.X11-unix may be missing in
# a fresh container.
desktop_user=(-o "$DESKPILOT_USER" -g "$(id -gn "$DESKPILOT_USER")")
display_user=(-o "$DESKPILOT_DESKTOP_RUNS_AS" -g "$(id -gn "$DESKPILOT_DESKTOP_RUNS_AS")")
tasks_group=$(id -gn "$DESKPILOT_TASKS_RUNS_AS")
install -d -m 1777 /tmp/.X11-unix
install -d -m 0755 "$DESKPILOT_RUN_DIR"
install -d -m 0711 "$DESKPILOT_RUN_DIR/env"
install -m 0755 "$here/scripts/with-x.sh" "$here/scripts/with-env.sh" "$DESKPILOT_RUN_DIR/"
install -d -m 0700 "${desktop_user[@]}" "$DESKPILOT_RUN_DIR/session" "$DESKPILOT_RUN_DIR/session/tmp"
install -d -m 0711 "${desktop_user[@]}" "$DESKPILOT_RUN_DIR/hands"
install -d -m 0700 "${display_user[@]}" "$DESKPILOT_RUN_DIR/display"
install -d -m 0700 -o "$DESKPILOT_TASKS_RUNS_AS" -g "$tasks_group" "$DESKPILOT_STATE_DIR"
# A state volume of an earlier layout (everything the desktop user's) or of another image (another uid): the
# task service's user takes over what is neither root's nor its own (-h: a link itself, never its target).
find "$DESKPILOT_STATE_DIR" -xdev ! -user root ! -user "$DESKPILOT_TASKS_RUNS_AS" \
  -exec chown -h "$DESKPILOT_TASKS_RUNS_AS:$tasks_group" {} +

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

# ------------------------------------------------------------------------------------------------ secrets
# Commands as the task service's user: the token file is read and written with its rights, so a link planted
# in the state directory cannot point this script (root) at another file.
as_agent() {
  if [[ $DESKPILOT_TASKS_RUNS_AS == root ]]; then "$@"; else runuser -u "$DESKPILOT_TASKS_RUNS_AS" -- "$@"; fi
}
token=
case $token_source in
  environment)
    token=$DESKPILOT_TOKEN
    log "every service requires the token given in DESKPILOT_TOKEN"
    ;;
  file)
    read_it="read it with: cat $token_file (as root; in a container: docker exec <container> cat $token_file)"
    if as_agent test -s "$token_file"; then
      log "every service requires the token kept in $token_file (generated at the first start); $read_it"
    else
      # 32 random bytes, URL-safe base64 (43 characters), never on a command line (printf is a builtin);
      # drawn again when it starts with "-", which a command line would take for an option
      new_token=-
      while [[ $new_token == -* ]]; do
        new_token=$(head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=') || fail "no random bytes"
      done
      # shellcheck disable=SC2016 # $1 is sh's own argument
      printf '%s' "$new_token" | as_agent sh -c 'umask 077 && cat >"$1.new" && mv -f "$1.new" "$1"' sh "$token_file"
      unset new_token
      log "no DESKPILOT_TOKEN given and the services listen on $DESKPILOT_HOST: generated one into $token_file"
      log "(mode 0600, used again at every start; delete it and restart for a new one); $read_it"
    fi
    token=$(as_agent cat -- "$token_file") || fail "cannot read the token file $token_file"
    ;;
esac
[[ -z $token || $token != *[![:graph:]]* ]] || fail "the token may not contain spaces or control characters"
token_sha256=
[[ -z $token ]] || token_sha256=$(printf %s "$token" | sha256sum | cut -d' ' -f1)

# The X authority: a new MIT-MAGIC-COOKIE at every start, in two copies: the session's, readable by the desktop
# user alone, in root's run directory (the user cannot swap it for a link), and the display owner's (Xvfb,
# x11vnc, the desktop service) in its own directory. The cookie goes to xauth through a pipe: a command line
# is visible to everyone.
xauthority=$DESKPILOT_RUN_DIR/Xauthority
display_xauthority=$DESKPILOT_RUN_DIR/display/Xauthority
cookie=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
for file in "$xauthority" "$display_xauthority"; do
  rm -f "$file"
  printf 'add %s . %s\n' "$DESKPILOT_DISPLAY" "$cookie" | (umask 077 && : >"$file" && xauth -q -f "$file" source -)
done
chown "$DESKPILOT_USER:$(id -gn "$DESKPILOT_USER")" "$xauthority"
chown "$DESKPILOT_DESKTOP_RUNS_AS:$(id -gn "$DESKPILOT_DESKTOP_RUNS_AS")" "$display_xauthority"

# The desktop credential: what the task service and the UI present to the desktop service instead of the
# token, new at every start. Whatever reaches the desktop side then opens the desktop and nothing else.
desktop_credential=
[[ -z $token ]] || desktop_credential=$(head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')

# ------------------------------------------------------------------------------------------------ environments
# The toolkits' accessibility bridges (the accessibility action reads their trees) only with
# DESKTOP_ACCESSIBILITY=on (deskpilot/desktop/session.py does the same for the programs the service starts):
# GTK's bridge, Firefox's and Thunderbird's, Qt's (KeePassXC). Off, GTK's is told not to load.
case ${DESKTOP_ACCESSIBILITY:-off} in
  on | true | 1 | yes) toolkits=("GNOME_ACCESSIBILITY=1" "QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1" "QT_ACCESSIBILITY=1") ;;
  *) toolkits=("NO_AT_BRIDGE=1") ;;
esac
# What every program of the session sees (and the applications started from it), without a secret.
session_env=(
  "HOME=$DESKPILOT_HOME" "USER=$DESKPILOT_USER" "LOGNAME=$DESKPILOT_USER" "DISPLAY=$DESKPILOT_DISPLAY"
  "XAUTHORITY=$xauthority" "XDG_RUNTIME_DIR=$DESKPILOT_RUN_DIR/session" "${toolkits[@]}"
  "DBUS_SESSION_BUS_ADDRESS=unix:path=$DESKPILOT_RUN_DIR/session/bus"
  # a private TMPDIR: single-instance apps (KeePassXC) lock there, so a second appliance gets its own
  "TMPDIR=$DESKPILOT_RUN_DIR/session/tmp"
)

# NAME=VALUE of each exported variable whose name matches the extended regular expression $1, case-insensitively
# (as the services' settings read them), into the array named $2.
shopt -s nocasematch
take() {
  local -n into=$2
  local name
  while read -r name; do
    [[ $name =~ ^($1)$ ]] && into+=("$name=${!name}")
  done < <(compgen -e)
  return 0
}
base=()
take 'PATH|LANG|LANGUAGE|LC_[A-Z_]+|TZ|PYTHONUNBUFFERED' base
common=("${base[@]}")
take 'DESKPILOT_LOG_(FORMAT|LEVEL)' common
take 'DESKPILOT_METRICS' common  # off: no GET /metrics on any service (docs/operations.md#metrics)
# OpenTelemetry's standard variables (traces, deskpilot/tracing.py): the endpoint, the exporter's headers, the
# service name and resource attributes, the sampler. Unset, no service exports anything.
take 'OTEL_[A-Z0-9_]+' common
# uvicorn believes X-Forwarded-For only from these addresses (its default, loopback, would let any program of the
# desktop pick the address the UI's login throttle counts it under): none unless a reverse proxy is named.
common+=("FORWARDED_ALLOW_IPS=${DESKPILOT_TRUSTED_PROXIES:-}")
common+=("DESKPILOT_AUTH=${DESKPILOT_AUTH:-on}" "DESKPILOT_ALLOWED_ORIGINS=${DESKPILOT_ALLOWED_ORIGINS:-}"
  "DESKPILOT_ALLOWED_HOSTS=${DESKPILOT_ALLOWED_HOSTS:-${DESKTOP_MCP_ALLOWED_HOSTS:-}}")
# A service's own user and home: the task service and the UI keep theirs in the state directory.
tasks_home=("HOME=$DESKPILOT_STATE_DIR" "USER=$DESKPILOT_TASKS_RUNS_AS" "LOGNAME=$DESKPILOT_TASKS_RUNS_AS")

# The desktop settings the service and the desktop user's worker share (who the desktop user is, where files go).
desktop_settings=()
take 'DESKTOP_[A-Z0-9_]+' desktop_settings
desktop_settings+=("DESKTOP_DISPLAY=$DESKPILOT_DISPLAY" "DESKTOP_USER=$DESKPILOT_USER" "DESKTOP_HOME=$DESKPILOT_HOME"
  "DESKTOP_FILES_DIR=$DESKPILOT_HOME/Desktop" "DESKTOP_HANDS_SOCKET=$DESKPILOT_RUN_DIR/hands/hands.sock"
  "DESKTOP_HANDS_USER=$DESKPILOT_HANDS_RUNS_AS")

# The desktop service: the display owner's home, X authority and x11vnc's socket; the token's digest and the
# desktop credential's, never either.
desktop_env=("${common[@]}" "${desktop_settings[@]}")
desktop_env+=("HOME=$DESKPILOT_RUN_DIR/display" "USER=$DESKPILOT_DESKTOP_RUNS_AS"
  "LOGNAME=$DESKPILOT_DESKTOP_RUNS_AS" "TMPDIR=$DESKPILOT_RUN_DIR/display" "DISPLAY=$DESKPILOT_DISPLAY"
  "XAUTHORITY=$display_xauthority" "DESKTOP_PORT=$DESKTOP_PORT" "DESKTOP_DISPLAY_OWNER=$DESKPILOT_DESKTOP_RUNS_AS"
  "DESKTOP_VNC_SOCKET=$DESKPILOT_RUN_DIR/display/vnc.sock")
if [[ -n $token_sha256 ]]; then
  credential_sha256=$(printf %s "$desktop_credential" | sha256sum | cut -d' ' -f1)
  desktop_env+=("DESKPILOT_TOKEN_SHA256=$token_sha256,$credential_sha256")
fi

# x11vnc: the display owner's home and X authority (with-x.sh waits for the display of that user's Xvfb).
x11vnc_env=("${base[@]}" "HOME=$DESKPILOT_RUN_DIR/display" "TMPDIR=$DESKPILOT_RUN_DIR/display"
  "DISPLAY=$DESKPILOT_DISPLAY" "XAUTHORITY=$display_xauthority" "DESKPILOT_XVFB_USER=$DESKPILOT_DESKTOP_RUNS_AS")

# The desktop user's worker: the session's environment (the programs it starts inherit it) and the settings.
hands_env=("${base[@]}" "${session_env[@]}" "${desktop_settings[@]}")

# The task service and the agent loop: their settings, the providers' variables (deskpilot/config.py's
# PROVIDERS), LiteLLM's, and how to reach the internet (proxies, CA certificates).
tasks_env=("${common[@]}")
take 'TASKS_[A-Z0-9_]+|AGENT_[A-Z0-9_]+|DATABASE_URL|LITELLM_[A-Z0-9_]+' tasks_env
take '(ANTHROPIC|OPENAI|GEMINI|OPENROUTER)_(API_KEY|MODEL)' tasks_env
take '(HTTPS?|NO|ALL)_PROXY|SSL_CERT_(FILE|DIR)|REQUESTS_CA_BUNDLE' tasks_env
tasks_env+=("${tasks_home[@]}" "TASKS_PORT=$TASKS_PORT" "TASKS_DATABASE_URL=$TASKS_DATABASE_URL"
  "TASKS_DESKTOP_URL=http://127.0.0.1:$DESKTOP_PORT" "TASKS_DESKTOP_FILES_DIR=$DESKPILOT_HOME/Desktop")
[[ -z $token ]] || tasks_env+=("DESKPILOT_TOKEN=$token" "TASKS_DESKTOP_TOKEN=$desktop_credential")

ui_env=("${common[@]}")
take 'UI_[A-Z0-9_]+' ui_env
ui_env+=("${tasks_home[@]}" "UI_PORT=$UI_PORT" "UI_DESKTOP_URL=http://127.0.0.1:$DESKTOP_PORT"
  "UI_TASKS_URL=http://127.0.0.1:$TASKS_PORT")
[[ -z $token ]] || ui_env+=("DESKPILOT_TOKEN=$token" "UI_DESKTOP_TOKEN=$desktop_credential")
shopt -u nocasematch

# write_env PROGRAM OWNER NAME=VALUE...: the program's whole environment (bash-quoted, for with-env.sh), 0600.
# printf is a builtin: no value passes through a command line.
write_env() {
  local file=$DESKPILOT_RUN_DIR/env/$1 owner=$2 tmp kv
  shift 2
  tmp=$(mktemp "$file.XXXXXX")
  for kv in "$@"; do printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"; done >"$tmp"
  chown "$owner:$(id -gn "$owner")" "$tmp"
  mv -f "$tmp" "$file"
}
write_env desktop-api "$DESKPILOT_DESKTOP_RUNS_AS" "${desktop_env[@]}"
write_env hands "$DESKPILOT_HANDS_RUNS_AS" "${hands_env[@]}"
write_env x11vnc "$DESKPILOT_DESKTOP_RUNS_AS" "${x11vnc_env[@]}"
write_env task-api "$DESKPILOT_TASKS_RUNS_AS" "${tasks_env[@]}"
write_env ui "$DESKPILOT_TASKS_RUNS_AS" "${ui_env[@]}"

log "display $DESKPILOT_DISPLAY, desktop :$DESKTOP_PORT (live view /vnc), tasks :$TASKS_PORT," \
  "UI :$UI_PORT on $DESKPILOT_HOST; session and its worker run as $DESKPILOT_USER, display and desktop" \
  "service as $DESKPILOT_DESKTOP_RUNS_AS, task service and UI as $DESKPILOT_TASKS_RUNS_AS, home $DESKPILOT_HOME"
# supervisord's whole environment: the session's, and the settings supervisord.conf reads.
conf_env=()
for name in DESKPILOT_RUN_DIR DESKPILOT_DISPLAY DESKPILOT_HOST DESKPILOT_USER DESKPILOT_VENV DESKPILOT_STATE_DIR \
  DESKPILOT_DESKTOP_RUNS_AS DESKPILOT_HANDS_RUNS_AS DESKPILOT_TASKS_RUNS_AS DESKTOP_PORT TASKS_PORT UI_PORT \
  DESKPILOT_START_TASKS DESKPILOT_START_UI; do
  conf_env+=("$name=${!name}")
done
exec env -i "${base[@]}" "${session_env[@]}" "${conf_env[@]}" \
  "DESKPILOT_XVFB_USER=$DESKPILOT_DESKTOP_RUNS_AS" "$DESKPILOT_VENV/bin/python" "$here/scripts/supervise.py" \
  -c "$here/supervisord.conf"
