#!/usr/bin/env bash
# A Docker engine for `make image` and the image tests, that leaves the host's network alone.
#   scripts/docker-engine.sh start    an engine that answers: install Debian's docker.io when there is no daemon
#                                     binary, start one when none answers, wait until it does
#   scripts/docker-engine.sh stop     stop the daemon this script started (never another one)
#   scripts/docker-engine.sh status   say whether a daemon answers (exit 1 when none does)
# The daemon it starts runs with --iptables=false --ip-forward=false --ip-masq=false --bridge=none: no firewall
# rule, no forwarding switch, no docker0 bridge. Its containers get the host's network (--network host) or
# none; builds run with --network host. Nothing else about the host changes.
#   DESKPILOT_DOCKER_ROOT  data root (images, build cache)    default /var/lib/docker
#   DESKPILOT_DOCKER_LOG   the daemon's log                   default /var/log/deskpilot-dockerd.log
#   DESKPILOT_DOCKER_PID   its pid file (also marks "ours")   default /run/deskpilot-dockerd.pid
# Exit status 3: no engine can be had here (not root, no apt-get): callers may skip what needs one.
set -euo pipefail

root_dir=${DESKPILOT_DOCKER_ROOT:-/var/lib/docker}
log_file=${DESKPILOT_DOCKER_LOG:-/var/log/deskpilot-dockerd.log}
pid_file=${DESKPILOT_DOCKER_PID:-/run/deskpilot-dockerd.pid}

say() { echo "docker-engine: $*" >&2; }
cannot() {
  say "$*"
  exit 3
}

answers() { docker info >/dev/null 2>&1; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
  else cannot "need root (or sudo without a password) to run: $*"
  fi
}

install_engine() {
  command -v apt-get >/dev/null || cannot "no dockerd and no apt-get to install docker.io with"
  say "installing docker.io (Debian's engine)"
  # Keep the package's init scripts from starting a daemon with the default settings (which would add a
  # bridge and firewall rules): policy-rc.d answers "not now" to every service start during the install.
  local policy=/usr/sbin/policy-rc.d added=
  if [[ ! -e $policy ]]; then
    as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 0755 $policy"
    added=1
  fi
  local rc=0
  as_root apt-get update -qq || rc=$?
  ((rc)) || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    docker.io >/dev/null || rc=$?
  [[ -n $added ]] && as_root rm -f "$policy"
  return "$rc"
}

start() {
  if answers; then
    return 0
  fi
  command -v dockerd >/dev/null || install_engine
  # Debian's docker.io puts its client in /usr/bin; a client-only install elsewhere may shadow it, which is
  # fine: any client speaks to this daemon.
  command -v docker >/dev/null || cannot "dockerd is installed but no docker client is"
  if [[ -s $pid_file ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    say "the daemon started earlier (pid $(cat "$pid_file")) does not answer yet"
  else
    say "starting dockerd (data root $root_dir, log $log_file, no bridge, no iptables)"
    as_root install -d "$root_dir" "$(dirname "$log_file")" "$(dirname "$pid_file")"
    # setsid + no inherited descriptors: the daemon outlives this script and the make or pytest that ran it.
    # shellcheck disable=SC2016 # expanded by that sh
    as_root sh -c 'setsid "$@" </dev/null >>"$0" 2>&1 &' "$log_file" \
      dockerd --iptables=false --ip-forward=false --ip-masq=false --bridge=none \
      --data-root "$root_dir" --pidfile "$pid_file"
  fi
  for _ in $(seq 1 600); do
    answers && return 0
    sleep 0.1
  done
  say "dockerd did not answer within 60 s; the end of $log_file:"
  tail -n 20 "$log_file" >&2 || true
  exit 1
}

stop() {
  if [[ ! -s $pid_file ]]; then
    say "no daemon started by this script ($pid_file is missing)"
    return 0
  fi
  local pid
  pid=$(cat "$pid_file")
  if kill -0 "$pid" 2>/dev/null; then
    as_root kill -TERM "$pid"
    # dockerd stops its containers (10 s each at most) and its containerd, then removes the pid file.
    for _ in $(seq 1 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && { say "dockerd ($pid) did not stop within 30 s"; exit 1; }
  fi
  as_root rm -f "$pid_file"
  say "stopped"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status)
    if answers; then
      say "a daemon answers: $(docker version --format '{{.Server.Version}}' 2>/dev/null)"
    else
      say "no daemon answers"
      exit 1
    fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
