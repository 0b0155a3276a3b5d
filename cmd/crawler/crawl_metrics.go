package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/termsafe"
)

// crawlMetrics serves `crawler crawl --metrics-listen`: the node's
// Prometheus metrics (the same collector as `crawler node`'s, with the Go
// runtime and process collectors: heap, RSS) on /metrics, so that a long
// crawl can be watched and sampled (make scale does). It owns one
// goroutine, which Close stops and waits for.
type crawlMetrics struct {
	srv *http.Server
	wg  sync.WaitGroup
}

// serveCrawlMetrics listens on addr ("" = off: returns nil) and prints the
// URL it serves.
func serveCrawlMetrics(env *cmdEnv, addr string, n *crawl.Node) (*crawlMetrics, error) {
	if addr == "" {
		return nil, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	reg := newMetricsRegistry(&statsCollector{node: n.Stats})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	m := &crawlMetrics{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := m.srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			env.logger().Warn("metrics server stopped", "err", err)
		}
	}()
	fmt.Fprintf(env.stdout, "metrics on http://%s/metrics\n", termsafe.String(lis.Addr().String()))
	return m, nil
}

// Close stops the server; nil is a no-op, and a second Close too.
func (m *crawlMetrics) Close() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	m.wg.Wait()
}
