#!/usr/bin/env bash
# The image's HEALTHCHECK: healthy when the desktop, agent and UI services each answer GET /health with 200
# and "status": "ok". A degraded service (no display, no VNC, no database) answers otherwise, and so fails it.
# Bash alone (no interpreter to start, no client to install), on the same port variables as appliance.sh.
#
# Docker 20.10 has no --start-interval, so the first probe comes one --interval after the start. To turn
# healthy the moment the services answer without probing often for the container's whole life, a probe in
# the container's first START_SECONDS waits for them (up to WAIT_SECONDS, polling); later probes check once.
set -uo pipefail
START_SECONDS=60 # keep equal to the HEALTHCHECK's --start-period
WAIT_SECONDS=20  # keep below its --timeout

check() {
  local port=$1 response
  { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || { echo "port $port: no answer"; return 1; }
  printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  response=$(timeout 2 cat <&3)
  exec 3<&-
  if [[ $response != "HTTP/1."[01]" 200 "* || ! $response =~ \"status\":\ ?\"ok\" ]]; then
    echo "port $port: ${response##*$'\r\n\r\n'}"
    return 1
  fi
}

all() {
  local port status=0
  for port in "${DESKTOP_PORT:-9990}" "${TASKS_PORT:-9991}" "${UI_PORT:-9992}"; do
    check "$port" || status=1
  done
  return "$status"
}

# seconds since PID 1 (supervisord) started: /proc/uptime less its start time (field 22 of its stat line)
read -r uptime _ </proc/uptime
stat=$(</proc/1/stat)
read -ra fields <<<"${stat##*) }"
age=$((${uptime%.*} - fields[19] / $(getconf CLK_TCK)))

if ((age < START_SECONDS)); then
  deadline=$((SECONDS + WAIT_SECONDS))
  until all >/dev/null; do
    ((SECONDS < deadline)) || break
    sleep 0.2
  done
fi
all
