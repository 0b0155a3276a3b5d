//go:build tools

// Package tools pins the third-party modules the project builds on, so that
// `go mod tidy` keeps them while packages that use them are being written.
// It is never compiled into the crawler.
package tools

import (
	_ "github.com/andybalholm/brotli"
	_ "github.com/cespare/xxhash/v2"
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/nlnwa/whatwg-url/url"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/temoto/robotstxt"
	_ "go.uber.org/goleak"
	_ "golang.org/x/net/html"
	_ "golang.org/x/net/html/charset"
	_ "golang.org/x/net/publicsuffix"
	_ "golang.org/x/sync/singleflight"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/vg/vgimg"
	_ "google.golang.org/grpc"
	_ "google.golang.org/grpc/health"
	_ "google.golang.org/protobuf/proto"
)
