package proto

// The status service (status.proto) has its own directive so that it can be
// regenerated without touching the peer wire (sextant.proto).
//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative status.proto
