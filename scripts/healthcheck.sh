#!/usr/bin/env bash
# The image's HEALTHCHECK: healthy when the desktop, agent and UI services each answer GET /health with 200
# and "status": "ok". A degraded service (no display, no VNC, no database) answers otherwise, and so fails it.
# Bash alone (no interpreter to start, no client to install): Docker runs it every couple of seconds.
# It follows the same port variables as scripts/appliance.sh.
set -uo pipefail

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

status=0
for port in "${DESKTOP_PORT:-9990}" "${AGENT_PORT:-9991}" "${UI_PORT:-9992}"; do
  check "$port" || status=1
done
exit "$status"
