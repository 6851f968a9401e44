#!/usr/bin/env bash
# Builds Bytebot's desktop daemon (bytebotd, packages/bytebotd of bytebot-ai/bytebot) from its public source
# under the peers cache, outside the repository, for bench/peers.py, as its Dockerfile does: npm install,
# its input library's native module (libnut, from ZachJW34/libnut-core) built with cmake-js and
# uiohook-napi rebuilt with node-gyp, both against this Node's own headers (nothing downloaded but npm
# packages), then `npm run build`. Nothing here is committed but this script.
#
#   bench/peers/setup-bytebot.sh        # -> ${DESKPILOT_PEERS_CACHE:-~/.cache/deskpilot-peers}/bytebot
#
# Sources: BYTEBOT_GIT and LIBNUT_GIT (a git URL or a local clone; by default the mirrors that the search
# tool's fetch leaves under /work/.mirror, else GitHub), checked out at the commits pinned below.
# One change to the built daemon: it listens on 127.0.0.1:$BYTEBOTD_PORT instead of its fixed 9990.
set -euo pipefail

CACHE="${DESKPILOT_PEERS_CACHE:-$HOME/.cache/deskpilot-peers}"
DEST="$CACHE/bytebot"
BYTEBOT_COMMIT="${BYTEBOT_COMMIT:-99347e260b495e0900ac16cc7f11ce2ec5ae9a6c}"
LIBNUT_COMMIT="${LIBNUT_COMMIT:-c42c100336952067f8ed28e14c067972008b619f}"

pick() { if [ -d "$1" ]; then echo "$1"; else echo "$2"; fi; }
BYTEBOT_GIT="${BYTEBOT_GIT:-$(pick /work/.mirror/bytebot-ai+bytebot/repo https://github.com/bytebot-ai/bytebot)}"
LIBNUT_GIT="${LIBNUT_GIT:-$(pick /work/.mirror/ZachJW34+libnut-core/repo https://github.com/ZachJW34/libnut-core)}"

# what the native modules build with (the Dockerfile's libxtst-dev, cmake, and uiohook's X11 extensions)
DEBS=(cmake g++ make libx11-dev libxtst-dev libxrandr-dev libxinerama-dev libxt-dev libxkbfile-dev
    libxkbcommon-x11-dev libpng-dev)
missing=()
for d in "${DEBS[@]}"; do dpkg -s "$d" >/dev/null 2>&1 || missing+=("$d"); done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup-bytebot: apt-get install ${missing[*]}"
    apt-get install -y -q "${missing[@]}" >/dev/null
fi

# node-gyp and cmake-js take Node's headers from nodedir instead of downloading them
NODEDIR="$(dirname "$(dirname "$(node -p process.execPath)")")"
if [ ! -f "$NODEDIR/include/node/node_api.h" ]; then
    echo "setup-bytebot: no Node headers in $NODEDIR/include/node (Debian: libnode-dev)" >&2
    exit 1
fi
export npm_config_nodedir="$NODEDIR"
echo "setup-bytebot: node $(node --version), headers $NODEDIR/include/node -> $DEST"

rm -rf "$DEST"
mkdir -p "$DEST"
git clone -q --no-checkout "$BYTEBOT_GIT" "$DEST/src"
# only the daemon and the package it builds with: the mirror lacks the UI's large pictures
git -C "$DEST/src" checkout -q "$BYTEBOT_COMMIT" -- packages/bytebotd packages/shared
git clone -q "$LIBNUT_GIT" "$DEST/libnut-core"
git -C "$DEST/libnut-core" checkout -q "$LIBNUT_COMMIT"

cd "$DEST/src/packages/shared"
npm ci --no-fund --no-audit --loglevel=error
cd ../bytebotd
# `npm ci` refuses: the lock file lacks optional packages that package.json asks for (@napi-rs/nice-*)
npm install --no-fund --no-audit --loglevel=error

(cd "$DEST/libnut-core" && npm install --ignore-scripts --no-fund --no-audit --loglevel=error \
    && npm run build:release >"$DEST/libnut-build.log" 2>&1)
cp "$DEST/libnut-core/build/Release/libnut.node" \
    node_modules/@nut-tree-fork/libnut-linux/build/Release/libnut.node
npm rebuild uiohook-napi --build-from-source --loglevel=error >"$DEST/uiohook-build.log" 2>&1
npm run build >"$DEST/build.log" 2>&1

sed -i 's/app.listen(9990)/app.listen(Number(process.env.BYTEBOTD_PORT || 9990), "127.0.0.1")/' dist/main.js
grep -q BYTEBOTD_PORT dist/main.js
echo "bytebot $BYTEBOT_COMMIT libnut-core $LIBNUT_COMMIT node $(node --version)" > "$DEST/READY"
echo "setup-bytebot: ready: BYTEBOTD_PORT=PORT DISPLAY=:N node $DEST/src/packages/bytebotd/dist/main.js"
