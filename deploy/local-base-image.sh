#!/bin/sh
# Builds a stand-in for the official node:24.21.0-bookworm-slim image on a machine that reaches
# the Debian and npm registries but no container registry (docs/runbook.md, "Building the image
# on a machine without a registry"). Same layout as the official image where the Dockerfile
# depends on it: Debian bookworm, node and npm under /usr/local, user `node` (uid/gid 1000).
# Run as root from the repository root, with a Docker daemon; then
#   docker build --network host --build-arg NODE_IMAGE=local/node:24.21.0-bookworm-slim .
set -eu

TAG=${TAG:-local/node:24.21.0-bookworm-slim}
WORK=${WORK:-$(mktemp -d /tmp/node-base.XXXXXX)}
ROOTFS=$WORK/rootfs
MIRROR=${MIRROR:-http://deb.debian.org/debian}
# The pinned Node: the `node` devDependency's binary (the official linux-x64 build, repackaged).
NODE_BIN=$(readlink -f "${NODE_BIN:-node_modules/node/bin/node}")
NPM_VERSION=${NPM_VERSION:-11.19.1}

want=v$("$NODE_BIN" -p "require('./package.json').devDependencies.node")
have=$("$NODE_BIN" --version)
if [ "$have" != "$want" ]; then
  echo "node binary $NODE_BIN is $have, package.json pins $want" >&2
  exit 1
fi

debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR"

# The official image's unprivileged user, which the Dockerfile's `USER node` expects.
chroot "$ROOTFS" groupadd --gid 1000 node
chroot "$ROOTFS" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

install -m 0755 "$NODE_BIN" "$ROOTFS/usr/local/bin/node"
# npm for the Dockerfile's `npm ci`: the published package bundles its own dependencies.
npm pack "npm@$NPM_VERSION" --pack-destination "$WORK" --silent >/dev/null
mkdir -p "$ROOTFS/usr/local/lib/node_modules/npm"
tar -xzf "$WORK/npm-$NPM_VERSION.tgz" --strip-components=1 -C "$ROOTFS/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$ROOTFS/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$ROOTFS/usr/local/bin/npx"

# What debian:bookworm-slim leaves out: package caches, docs, manuals, translations.
rm -rf "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb \
  "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* \
  "$ROOTFS"/usr/share/info/* "$ROOTFS"/usr/share/locale/* "$ROOTFS"/var/log/*.log

tar --numeric-owner -C "$ROOTFS" -c . | docker import \
  --change "ENV NODE_VERSION=${want#v}" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  - "$TAG"

rm -rf "$WORK"
docker image ls "$TAG"
