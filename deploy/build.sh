#!/usr/bin/env bash
# Builds the sextant image without network: a static binary from this
# checkout and a FROM-scratch image around it.
#   deploy/build.sh [TAG]        (default sextant:dev)
# VERSION (default: git describe) and REVISION (default: git rev-parse HEAD)
# are stamped into the binary (crawler version, sextant_build_info) and the
# image's OCI labels. deploy/build-multistage.sh builds the same image with
# the standard multi-stage Dockerfile.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-sextant:dev}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
revision=${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
CGO_ENABLED=0 GOFLAGS=${GOFLAGS:--buildvcs=false} go build -trimpath \
  -ldflags="-s -w -X main.version=$version -X main.revision=$revision" -o "$ctx/crawler" ./cmd/crawler
cp -r deploy/rootfs "$ctx/rootfs"
mkdir -p "$ctx/data" "$ctx/tmp" "$ctx/ca"
chmod 1777 "$ctx/tmp"
cp deploy/Dockerfile "$ctx/Dockerfile"
docker build -q -t "$tag" --build-arg VERSION="$version" --build-arg REVISION="$revision" "$ctx" >/dev/null
echo "built $tag ($version)"
