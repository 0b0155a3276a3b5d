package proto

// Regenerating needs protoc (Debian: protobuf-compiler) and the two plugins at
// the versions .ci/proto-check.sh installs.
//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative sextant.proto
