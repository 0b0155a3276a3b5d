#!/usr/bin/env bash
# Checks that the generated code in proto/ matches proto/*.proto: installs
# protoc (Debian protobuf-compiler, only when running as root) and the two Go
# plugins at pinned versions, regenerates, and fails on any diff.
set -euo pipefail
cd "$(dirname "$0")/.."

# protoc-gen-go comes from google.golang.org/protobuf, so it follows go.mod.
# protoc-gen-go-grpc is its own module; v1.6.2 emits code for
# grpc.SupportPackageIsVersion9 (grpc >= 1.64, go.mod has a newer grpc).
PROTOC_GEN_GO_VERSION=$(go list -m -f '{{.Version}}' google.golang.org/protobuf)
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

if ! command -v protoc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update && apt-get install -y protobuf-compiler
  else
    echo "proto-check: protoc missing; install Debian's protobuf-compiler" >&2
    exit 1
  fi
fi
echo "== protoc: $(protoc --version)"

GOBIN=$(go env GOPATH)/bin
export PATH="$GOBIN:$PATH"
go install "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO_VERSION}"
go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}"

echo "== go generate ./proto"
go generate ./proto
if ! git diff --exit-code -- proto/; then
  echo "proto-check: generated code in proto/ is out of date; run 'go generate ./proto' and commit" >&2
  exit 1
fi
if [ -n "$(git status --porcelain -- proto/)" ]; then
  echo "proto-check: go generate left untracked files in proto/:" >&2
  git status --porcelain -- proto/ >&2
  exit 1
fi
echo "proto-check: ok"
