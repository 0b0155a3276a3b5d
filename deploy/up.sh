#!/usr/bin/env bash
# Brings up the compose cluster (simweb + 3-member etcd + 3 nodes) in one command:
#   deploy/up.sh            build the image, make the PKI once, docker compose up -d
# Watch it crawl:  curl -s localhost:9101/metrics | grep sextant_fetches_total
# Tear down:       docker compose -p sextant -f deploy/compose.yaml down -v
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/build.sh sextant:dev
if [ -d deploy/compose/pki/node-0 ] && [ ! -d deploy/compose/pki/etcd-0 ]; then
  echo "deploy/compose/pki predates the etcd members (no etcd-0/): remove it (and the volumes:" >&2
  echo "docker compose -p sextant -f deploy/compose.yaml down -v) and run again" >&2
  exit 1
fi
if [ ! -d deploy/compose/pki/node-0 ]; then
  if [ -e deploy/compose/pki/ca.pem ]; then
    echo "deploy/compose/pki holds an old flat PKI (every key mounted into every node);" >&2
    echo "remove it (and the volumes: docker compose -p sextant -f deploy/compose.yaml down -v) and run again" >&2
    exit 1
  fi
  # One directory per node, mounted only into that node: its key stays
  # 0600, owned by the image's user (65532). Made in the image as root,
  # which may chown without privilege on the host; the CA key stays
  # outside every mount (root-owned, 0600).
  mkdir -p deploy/compose/pki
  docker run --rm --user 0:0 -v "$PWD/deploy/compose/pki:/out" sextant:dev \
    certs --nodes 3 --etcd 3 --out /out --hosts localhost --per-node --owner 65532:65532
fi
if docker compose version >/dev/null 2>&1; then dc="docker compose"; else dc="docker-compose"; fi
$dc -p sextant -f deploy/compose.yaml up -d
$dc -p sextant -f deploy/compose.yaml ps
