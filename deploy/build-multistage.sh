#!/usr/bin/env bash
# Builds the sextant image with deploy/Dockerfile.multistage, offline: the
# context is this checkout's files plus a vendor/ copy of the modules (go
# mod vendor), built with GOPROXY=off and -mod=vendor. The builder image is
# $BUILDER, else one made by deploy/builder-image.sh from this machine's Go.
#   deploy/build-multistage.sh [TAG]     (default sextant:dev)
# VERSION (default: git describe) and REVISION (default: git rev-parse HEAD)
# are stamped into the binary (crawler version) and the image's labels.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-sextant:dev}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
revision=${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
builder=${BUILDER:-}
if [ -z "$builder" ]; then
  builder=sextant-builder:local
  docker image inspect "$builder" >/dev/null 2>&1 || deploy/builder-image.sh "$builder" >/dev/null
fi
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
git ls-files -co --exclude-standard -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$ctx" -xf -
rm -rf "$ctx/deploy/compose/pki"
go mod vendor -o "$ctx/vendor"
docker build -q -f "$ctx/deploy/Dockerfile.multistage" -t "$tag" \
  --build-arg BUILDER="$builder" --build-arg VERSION="$version" --build-arg REVISION="$revision" \
  --build-arg GOPROXY=off --build-arg GOFLAGS="-buildvcs=false -mod=vendor" "$ctx" >/dev/null
echo "built $tag ($version, builder $builder)"
