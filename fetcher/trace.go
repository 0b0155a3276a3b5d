package fetcher

import (
	"context"
	"crypto/tls"
	"net"
	"net/http/httptrace"
	"net/netip"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/internal/histogram"
)

// Histogram is a latency histogram's snapshot (seconds): see Stats.
type Histogram = histogram.Snapshot

// latencies are the Fetcher's histograms, aggregated over all fetches.
type latencies struct {
	fetch, ttfb, dns, tls *histogram.Histogram
}

func newLatencies() latencies {
	return latencies{fetch: histogram.New(histogram.FetchBounds...), ttfb: histogram.New(histogram.FetchBounds...),
		dns: histogram.New(histogram.NetBounds...), tls: histogram.New(histogram.NetBounds...)}
}

// fetchTrace is one fetch's httptrace hooks and what they record. Building
// a ClientTrace, its closures and the context values costs several
// allocations per fetch, so traces are pooled: a fetch takes one, and gives
// it back only when no hook can still run on it (see done).
type fetchTrace struct {
	f    *Fetcher
	ct   httptrace.ClientTrace
	vals context.Context // Background holding &ct, built once

	// Written on the fetch's goroutine (GotConn) or before the response
	// is handed to it (GotFirstResponseByte, on the connection's read loop).
	proxied   bool
	remote    netip.Addr
	wasIdle   bool
	firstByte time.Time
	// hs may be written on the transport's dial goroutine (it locks).
	hs handshakeTrace
}

var tracePool sync.Pool // of *fetchTrace

// trace returns a fetch trace for f, reset.
func (f *Fetcher) trace(proxied bool) *fetchTrace {
	t, _ := tracePool.Get().(*fetchTrace)
	if t == nil || t.f != f {
		t = &fetchTrace{f: f}
		t.ct = httptrace.ClientTrace{GotConn: t.gotConn, GotFirstResponseByte: t.gotFirstByte,
			TLSHandshakeStart: t.hs.start, TLSHandshakeDone: t.tlsDone}
		t.vals = httptrace.WithClientTrace(context.Background(), &t.ct)
	}
	t.proxied, t.remote, t.wasIdle, t.firstByte = proxied, netip.Addr{}, false, time.Time{}
	t.hs.reset()
	return t
}

// context returns ctx carrying the trace's hooks. The wrapper is allocated
// per fetch: a dial the transport starts for this request keeps its context
// after the fetch returns.
func (t *fetchTrace) context(ctx context.Context) context.Context {
	return &tracedCtx{Context: ctx, vals: t.vals}
}

// done gives the trace back for reuse if no hook can run on it any more:
// the fetch got a response (its read loop is past GotFirstResponseByte) on
// a connection taken idle from the pool, so the transport started no dial
// for it (a dial outlives its request and would fire TLS hooks into the
// next fetch's trace).
func (t *fetchTrace) done(ok bool) {
	if ok && t.wasIdle {
		tracePool.Put(t)
	}
}

func (t *fetchTrace) gotConn(ci httptrace.GotConnInfo) {
	t.wasIdle = ci.WasIdle
	if !ci.Reused {
		markH2(ci.Conn) // boundIdle counts the h2 pool
	}
	if t.proxied {
		return // the proxy's address: keep the target's
	}
	if ta, ok := ci.Conn.RemoteAddr().(*net.TCPAddr); ok {
		t.remote = ta.AddrPort().Addr().Unmap()
	}
}

func (t *fetchTrace) gotFirstByte() { t.firstByte = time.Now() }

// tlsDone may run on the transport's dial goroutine.
func (t *fetchTrace) tlsDone(cs tls.ConnectionState, err error) {
	took := t.hs.finish(err)
	if err == nil {
		s := &t.f.stats
		s.tlsHandshakes.add(1)
		if cs.DidResume {
			s.tlsResumed.add(1)
		}
		s.lat.tls.Observe(took)
	}
}

// tracedCtx is a context whose values are the trace's first, then the
// fetch's: one allocation where httptrace.WithClientTrace makes several.
// A ClientTrace already in ctx is shadowed, not composed: nothing in this
// module installs one.
type tracedCtx struct {
	context.Context
	vals context.Context
}

func (c *tracedCtx) Value(key any) any {
	if v := c.vals.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}
