package proto

// The control service (control.proto) has its own directive so that it can
// be regenerated without touching the other services.
//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative control.proto
