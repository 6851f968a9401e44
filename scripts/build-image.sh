#!/usr/bin/env bash
# Build the appliance image from this checkout (`make image`; the image tests and bench/image.py too):
# a Docker engine (scripts/docker-engine.sh start), the base image (scripts/base-image.sh), then a BuildKit
# build on the host's network (the engine has no bridge).
#   scripts/build-image.sh [TAG [DOCKER-BUILD-OPTIONS...]]     default tag: deskpilot
# Behind a TLS-inspecting proxy the build must trust the proxy's CA certificates:
#   DESKPILOT_BUILD_CA       a PEM file, or a directory of *.crt files; default: the host's locally added ones
#                            (/usr/local/share/ca-certificates), if any; "none" for none. They reach the build
#                            as the BuildKit secret `build-ca`, which no layer of the image keeps ...
#   DESKPILOT_KEEP_BUILD_CA  ... unless this is 1: then the image trusts them too (its system store)
#   DESKPILOT_VIDEO          1 adds ffmpeg (a trajectory's MP4; docs/operations.md)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=${1:-deskpilot}
shift || true

say() { echo "build-image: $*" >&2; }

"$here/scripts/docker-engine.sh" start
"$here/scripts/base-image.sh"

# A client that builds with BuildKit (build secrets): one with the buildx plugin, or one from before Docker 23
# (Debian's docker.io), whose own `docker build` does with DOCKER_BUILDKIT=1. A newer client without buildx
# only has the legacy builder, which knows no secrets; Debian's client is then found in /usr/bin.
build=()
for client in docker /usr/bin/docker; do
  command -v "$client" >/dev/null || continue
  if "$client" buildx version >/dev/null 2>&1; then
    build=("$client" buildx build --load)
    break
  fi
  major=$("$client" version --format '{{.Client.Version}}' 2>/dev/null | cut -d. -f1)
  if [[ $major =~ ^[0-9]+$ ]] && ((major < 23)); then
    build=(env DOCKER_BUILDKIT=1 "$client" build)
    break
  fi
done
((${#build[@]})) || { say "no Docker client that builds with BuildKit (install docker-buildx or docker.io)"; exit 1; }

ca=${DESKPILOT_BUILD_CA:-/usr/local/share/ca-certificates}
bundle=$(mktemp)
trap 'rm -f "$bundle"' EXIT
if [[ $ca != none && -d $ca ]]; then
  find "$ca" -name '*.crt' -type f -exec cat {} + >"$bundle"
elif [[ $ca != none && -f $ca ]]; then
  cat "$ca" >"$bundle"
elif [[ $ca != none && -n ${DESKPILOT_BUILD_CA:-} ]]; then
  say "DESKPILOT_BUILD_CA=$ca is neither a file nor a directory"
  exit 1
fi
secret=()
if [[ -s $bundle ]]; then
  say "the build trusts $(grep -c -- '-BEGIN CERTIFICATE-' "$bundle") extra CA certificate(s) from $ca"
  secret=(--secret "id=build-ca,src=$bundle")
fi
[[ ${DESKPILOT_KEEP_BUILD_CA:-} == 1 ]] && secret+=(--build-arg KEEP_BUILD_CA=1)
[[ ${DESKPILOT_VIDEO:-} == 1 ]] && secret+=(--build-arg DESKPILOT_VIDEO=1)

"${build[@]}" --network host "${secret[@]}" -t "$tag" "$@" "$here"
