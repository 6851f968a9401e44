#!/usr/bin/env bash
# Run one image build step trusting extra CA certificates, e.g. those of a TLS-inspecting proxy between the
# build and the package registries. They come in as the BuildKit secret `build-ca` (a PEM bundle, mounted at
# /run/secrets/build-ca for that step only; scripts/build-image.sh passes the host's locally added ones).
# The step sees one bundle (the system's roots, when installed, plus the extra ones) through the variables
# apt, pip and Python's ssl read; the bundle is a temporary file, gone when the step ends, so no layer keeps it.
#   scripts/with-build-ca.sh COMMAND [ARGS...]
#   scripts/with-build-ca.sh --keep     add them to the image's system store for good (build arg KEEP_BUILD_CA)
set -euo pipefail
secret=${BUILD_CA_SECRET:-/run/secrets/build-ca}

if [[ ${1:-} == --keep ]]; then
  [[ -s $secret ]] || { echo "with-build-ca: KEEP_BUILD_CA is set but no build-ca secret was given" >&2; exit 1; }
  # one certificate a file, as update-ca-certificates expects
  awk -v dir=/usr/local/share/ca-certificates '/-BEGIN CERTIFICATE-/ { n++ }
    n { print > (dir "/deskpilot-build-ca-" n ".crt") }' "$secret"
  update-ca-certificates >/dev/null
  exit 0
fi
[[ -s $secret ]] || exec "$@"

bundle=$(mktemp)
apt_conf=$(mktemp)
trap 'rm -f "$bundle" "$apt_conf"' EXIT
cat /etc/ssl/certs/ca-certificates.crt "$secret" 2>/dev/null >"$bundle" || cat "$secret" >"$bundle"
echo "Acquire::https::CAInfo \"$bundle\";" >"$apt_conf"
export APT_CONFIG=$apt_conf SSL_CERT_FILE=$bundle PIP_CERT=$bundle REQUESTS_CA_BUNDLE=$bundle CURL_CA_BUNDLE=$bundle
"$@"
