#!/usr/bin/env bash
# Builds the sextant image without network: a static binary from this
# checkout and a FROM-scratch image around it.
#   deploy/build.sh [TAG]        (default sextant:dev)
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-sextant:dev}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 GOFLAGS=${GOFLAGS:--buildvcs=false} go build -trimpath -ldflags='-s -w' -o "$ctx/crawler" ./cmd/crawler
cp -r deploy/rootfs "$ctx/rootfs"
mkdir -p "$ctx/data" "$ctx/tmp" "$ctx/ca"
chmod 1777 "$ctx/tmp"
cp deploy/Dockerfile "$ctx/Dockerfile"
docker build -q -t "$tag" "$ctx" >/dev/null
echo "built $tag"
