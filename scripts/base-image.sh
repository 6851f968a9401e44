#!/usr/bin/env bash
# The Dockerfile's base, debian:bookworm-slim: kept when the engine has it, pulled when a registry answers,
# otherwise made here from this machine's own Debian mirrors (debootstrap --variant=minbase, trimmed and
# configured the way the official slim image is) and imported under that tag. Once made, it stays in the
# engine, so the next build starts at once.
#   scripts/base-image.sh [TAG]    default debian:bookworm-slim; the suite is the tag's first word
set -euo pipefail
tag=${1:-debian:bookworm-slim}
suite=${tag##*:}
suite=${suite%%-*}

say() { echo "base-image: $*" >&2; }

docker image inspect "$tag" >/dev/null 2>&1 && exit 0
if timeout 120 docker pull -q "$tag" >/dev/null 2>&1; then
  say "pulled $tag"
  exit 0
fi

say "cannot pull $tag: making it from this machine's Debian mirrors"
[[ $(id -u) -eq 0 ]] || { say "debootstrap needs root"; exit 1; }
command -v debootstrap >/dev/null || {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
}

# The machine's own mirrors for the suite, its updates and its security updates ("URI suite" lines).
# shellcheck disable=SC2016 # apt's own $(FIELD) syntax
mapfile -t repos < <(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Created-By: Packages' |
  awk -v s="$suite" '$2 == s || $2 == s "-updates" || $2 == s "-security"' | sort -u)
mirror=$(printf '%s\n' "${repos[@]}" | awk -v s="$suite" '$2 == s {print $1; exit}')
[[ -n $mirror ]] || { say "no apt source for '$suite' on this machine (apt-get update first?)"; exit 1; }

rootfs=$(mktemp -d /var/tmp/base-image.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >/dev/null 2>"$rootfs.log" || {
  tail -n 20 "$rootfs.log" >&2
  exit 1
}
rm -f "$rootfs.log"

# The configuration the official image ships: no service starts during installs, no docs, man pages or
# translations from later installs, no apt caches, compressed package lists.
cat >"$rootfs/usr/sbin/policy-rc.d" <<'EOF'
#!/bin/sh
# Services are not started while packages are installed in an image build.
exit 101
EOF
chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
# slim: no documentation (but the copyright files), man pages, info pages or translations
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/man/*
EOF
echo force-unsafe-io >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
clean='"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true";'
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<EOF
DPkg::Post-Invoke { $clean };
APT::Update::Post-Invoke { $clean };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
echo 'Acquire::GzipIndexes "true";' >"$rootfs/etc/apt/apt.conf.d/docker-gzip-indexes"
echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$rootfs/etc/apt/apt.conf.d/docker-autoremove-suggests"

# The sources: the same mirrors as this machine, in the deb822 form the official image uses.
rm -f "$rootfs/etc/apt/sources.list"
for r in "${repos[@]}"; do
  read -r uri release <<<"$r"
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n\n' \
    "$uri" "$release" /usr/share/keyrings/debian-archive-keyring.gpg
done >"$rootfs/etc/apt/sources.list.d/debian.sources"

# Trim what the slim variant does not carry, and what debootstrap leaves behind.
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
rm -rf "$rootfs"/usr/share/{man,info,groff,linda,lintian}/* "$rootfs"/var/cache/apt/*.bin \
  "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log \
  "$rootfs"/var/log/apt/* "$rootfs"/tmp/* "$rootfs"/etc/hostname "$rootfs"/etc/resolv.conf
: >"$rootfs/etc/machine-id" 2>/dev/null || true

tar -C "$rootfs" --numeric-owner -c . | docker import -c 'CMD ["bash"]' \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -m "debootstrap --variant=minbase $suite from $mirror, trimmed as the slim image" - "$tag" >/dev/null
say "made $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1 / 1e6}'))"
