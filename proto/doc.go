// Package proto holds the gRPC service definitions between crawler nodes and
// their generated code only; hostsplit converts to its own types at the edge.
package proto
