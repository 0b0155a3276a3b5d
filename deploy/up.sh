#!/usr/bin/env bash
# Brings up the compose cluster (simweb + 3 nodes) in one command:
#   deploy/up.sh            build the image, make the PKI once, docker compose up -d
# Watch it crawl:  curl -s localhost:9101/metrics | grep sextant_fetches_total
# Tear down:       docker compose -p sextant -f deploy/compose.yaml down -v
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/build.sh sextant:dev
if [ ! -f deploy/compose/pki/ca.pem ]; then
  CGO_ENABLED=0 go run ./cmd/crawler certs --nodes 3 --out deploy/compose/pki --hosts localhost
  # The CA key stays out of the directory mounted into the containers, and
  # the nodes run as uid 65532 and must read their own keys.
  mv deploy/compose/pki/ca-key.pem deploy/compose/ca-key.pem
  chmod 0644 deploy/compose/pki/*.pem
fi
if docker compose version >/dev/null 2>&1; then dc="docker compose"; else dc="docker-compose"; fi
$dc -p sextant -f deploy/compose.yaml up -d
$dc -p sextant -f deploy/compose.yaml ps
