#!/usr/bin/env bash
# Makes a Go builder image for deploy/Dockerfile.multistage without any
# registry: FROM scratch with this machine's Go toolchain (go env GOROOT,
# statically linked), the CA certificates, and a shell, mkdir and chmod
# with their shared libraries for the Dockerfile's RUN line.
#   deploy/builder-image.sh [TAG]        (default sextant-builder:local)
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-sextant-builder:local}
goroot=$(go env GOROOT)
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/usr/local" "$root/etc/ssl/certs" "$root/tmp" "$root/root" "$root/src"
chmod 1777 "$root/tmp"
# The toolchain without its own test suite and docs.
tar -C "$(dirname "$goroot")" --anchored --exclude="$(basename "$goroot")/test" --exclude="$(basename "$goroot")/doc" \
  -cf - "$(basename "$goroot")" | tar -C "$root/usr/local" -xf -
[ "$(basename "$goroot")" = go ] || mv "$root/usr/local/$(basename "$goroot")" "$root/usr/local/go"
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
for bin in /bin/sh /bin/mkdir /bin/chmod; do
  mkdir -p "$root/bin"
  cp -L "$bin" "$root/bin/"
  for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/go/bin:/bin HOME=/root GOPATH=/root/go GOCACHE=/root/.cache/go-build \
    GOTOOLCHAIN=local CGO_ENABLED=0
WORKDIR /src
CMD ["go", "version"]
DOCKERFILE
docker build -q -t "$tag" "$ctx" >/dev/null
echo "built $tag ($(docker run --rm "$tag"))"
