#!/usr/bin/env bash
# System layer of the appliance: Debian packages, the desktop user, the services' system user, noVNC's static
# files.
# Shared by the Makefile (native `make run` / `make test`) and the Dockerfile, so the two cannot drift.
# Idempotent and quick when everything is present: apt runs only for what is missing. It says what it did (or
# that nothing was missing). The wheel carries it (setup.py): `deskpilot install --with-deps` runs that copy.
#   scripts/install-system.sh          runtime packages (what the image needs)
#   scripts/install-system.sh --test   runtime + what the tests and benches need (browser, PostgreSQL, linters,
#                                      Node.js for Helm and the TypeScript MCP client)
#   scripts/install-system.sh --python only the interpreter the venv is built from, and `strip` (the image's
#                                      Python stage)
#   scripts/install-system.sh --check  change nothing: say what the runtime lacks, exit 1 when something
# DESKPILOT_VIDEO=1 adds ffmpeg (~150 MB) to the runtime packages, for GET /tasks/{id}/trajectory?video=true;
# --test always has it.
set -euo pipefail

DESKTOP_USER=${DESKTOP_USER:-user}
TASKS_USER=${DESKPILOT_TASKS_USER:-${DESKPILOT_AGENT_USER:-deskpilot}}
DISPLAY_USER=${DESKPILOT_DISPLAY_USER:-deskpilot-display}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

runtime_packages=(
  # display, window manager, desktop, live view
  xvfb xauth xfwm4 xfdesktop4 xfce4-panel xfce4-settings dbus-x11 x11vnc
  at-spi2-core  # the session's accessibility bus and registry (the accessibility action)
  wmctrl xdotool xclip
  # the applications behind the identifiers
  firefox-esr keepassxc thunderbird geany xfce4-terminal thunar
  # CJK: WenQuanYi Micro Hei (5 MB: Chinese, Japanese and Korean in one sans face) rather than Noto CJK (90 MB)
  fonts-dejavu-core fonts-wqy-microhei adwaita-icon-theme
  procps
)
# venv from Debian's interpreter, so the desktop user can execute it
python_packages=(python3 python3-venv ca-certificates)
test_packages=(
  chromium postgresql shellcheck xterm x11-utils x11-xserver-utils python3-tk desktop-file-utils libglib2.0-bin
  python3-gi gir1.2-gtk-3.0  # tests/integration/desktop/probe_gtk.py: a GTK window, which answers _NET_WM_PING (Tk does not)
  python3-pyatspi  # bench/accessibility.py: pyatspi's walk of a tree, the baseline
  scrot imagemagick  # bench/peers.py: the screenshot commands of Anthropic's reference demo
  ffmpeg  # GET /tasks/{id}/trajectory?video=true, which the image has it only when built with DESKPILOT_VIDEO=1
  prometheus  # promtool checks each /metrics; tests/e2e/test_metrics.py scrapes a booted appliance with it
  valgrind  # bench/tracing.py --instructions counts a request's instructions (callgrind)
)
if [[ "${DESKPILOT_VIDEO:-0}" == 1 ]]; then runtime_packages+=(ffmpeg); fi

packages=("${python_packages[@]}")
if [[ "${1:-}" == --python ]]; then packages+=(binutils); else packages+=("${runtime_packages[@]}"); fi
if [[ "${1:-}" == --test ]]; then
  packages+=("${test_packages[@]}")
  # Only when npm is missing: a Node.js from elsewhere (NodeSource, nvm) brings its own npm, which
  # Debian's npm package would conflict with.
  command -v npm >/dev/null || packages+=(nodejs npm)
fi

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "install-system.sh: need root (or sudo) to run: $*" >&2; exit 1
  fi
}

check=
[[ "${1:-}" == --check ]] && check=1
changed=() # what this run did, or with --check would do: said at the end
# need WHAT: WHAT is missing; true when it is to be done now (false with --check)
need() {
  changed+=("$1")
  [[ -z $check ]]
}

missing=()
for p in "${packages[@]}"; do
  [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" == "ii " ]] || missing+=("$p")
done
if ((${#missing[@]})) && need "the Debian packages ${missing[*]}"; then
  echo "install-system.sh: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[[ "${1:-}" == --python ]] && exit 0

# noVNC's static files only: the Debian package itself depends on nodejs, numpy and websockify,
# none of which we need (the desktop service bridges the WebSocket itself).
if [[ ! -f /usr/share/novnc/vnc.html ]] && need "noVNC's files in /usr/share/novnc"; then
  tmp=$(mktemp -d)
  cd "$tmp"
  as_root apt-get download -qq novnc 2>/dev/null || { as_root apt-get update -qq && as_root apt-get download -qq novnc; }
  cd - >/dev/null
  as_root dpkg-deb -x "$tmp"/novnc_*.deb "$tmp/root"
  as_root mkdir -p /usr/share/novnc
  as_root cp -a "$tmp/root/usr/share/novnc/." /usr/share/novnc/
  rm -rf "$tmp"
fi

# The desktop user and its home layout.
if ! id -u "$DESKTOP_USER" >/dev/null 2>&1 && need "the desktop user $DESKTOP_USER"; then
  as_root useradd --create-home --shell /bin/bash "$DESKTOP_USER"
fi
if [[ -z $check ]]; then
  home=$(getent passwd "$DESKTOP_USER" | cut -d: -f6)
  as_root install -d -o "$DESKTOP_USER" -g "$DESKTOP_USER" "$home" "$home/Desktop" "$home/Documents" "$home/Downloads"
fi

# The system user of the task service (the agent, its provider keys, its database) and the UI (the token): no
# login, no home of its own but the state directory, which only it may enter. Nothing the desktop user runs can
# read its environment, its memory or its files.
if ! id -u "$TASKS_USER" >/dev/null 2>&1 && need "the system user $TASKS_USER"; then
  as_root useradd --system --user-group --home-dir /var/lib/deskpilot --no-create-home \
    --shell /usr/sbin/nologin "$TASKS_USER"
fi
[[ -n $check ]] || as_root install -d -m 0700 -o "$TASKS_USER" -g "$(id -gn "$TASKS_USER")" /var/lib/deskpilot

# The system user that owns the display: Xvfb, x11vnc and the desktop service, which drives the display and has
# the desktop user's worker do what needs that user's rights. Neither user can signal, trace or read the other.
if ! id -u "$DISPLAY_USER" >/dev/null 2>&1 && need "the system user $DISPLAY_USER"; then
  as_root useradd --system --user-group --home-dir /nonexistent --no-create-home \
    --shell /usr/sbin/nologin "$DISPLAY_USER"
fi

# rootfs/: the files the appliance adds to the system (browser and mail policies, ...), laid out as they land.
# rootfs/home/user is the desktop user's skeleton: scripts/appliance.sh applies it on every start, into whichever
# home is in use (a volume in the image, a temporary one in the tests).
while read -r f; do
  cmp -s "$here/rootfs/$f" "/$f" || ! need "/$f" \
    || as_root install -D -m "$(stat -c %a "$here/rootfs/$f")" "$here/rootfs/$f" "/$f"
done < <(cd "$here/rootfs" && find . -path ./home -prune -o -type f -printf '%P\n')

if [[ -n $check ]]; then
  ((${#changed[@]})) || { echo "install-system.sh: the appliance's system layer is complete"; exit 0; }
  printf 'install-system.sh: missing %s\n' "${changed[@]}"
  exit 1
fi
if ((${#changed[@]})); then
  printf 'install-system.sh: installed %s\n' "${changed[@]}"
else
  echo "install-system.sh: nothing to do: the appliance's system layer was complete"
fi
