#!/usr/bin/env bash
# The Docker fault suite of issue 7 (deploy/fault_test.go): builds the
# FROM-scratch image, runs simweb + a 3-member etcd + 3 nodes, kills,
# partitions and rolling-restarts nodes mid-crawl, takes etcd's quorum away
# and back, runs a `cluster add` that cannot complete, and checks the crawl
# logs against simweb's oracle. CI=true makes a missing Docker a failure, not a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export CI=${CI:-true}
SEXTANT_DOCKER=1 go test -count=1 -timeout 15m -run TestFaults -v ./deploy
# Packaging and the published status page (issue 28): both image builds
# (build.sh, Dockerfile.multistage with a local builder image) run `crawler
# version`; the compose cluster's status page opens from the host in
# headless Chromium with every node healthy.
SEXTANT_DOCKER=1 go test -count=1 -timeout 30m -run 'TestImageVersion|TestComposeStatusPage' -v ./deploy
