package simweb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server errors.
var (
	// ErrNotServed is returned by DialContext for a name the server does
	// not serve: to the crawler it is an unresolvable host.
	ErrNotServed = errors.New("simweb: host not served by this simweb")
	// ErrNotLoopback: Options.Listen is not a loopback address.
	ErrNotLoopback = errors.New("simweb: listen address is not loopback")
)

// Options configure a Server. The zero value is ready to use.
type Options struct {
	// Listen is the TCP address; default "127.0.0.1:0". It must be a
	// loopback address unless AllowNonLoopback is set.
	Listen           string
	AllowNonLoopback bool
	// NoLatency serves without the web's per-response latencies (stalls
	// of /stall/ pages remain).
	NoLatency bool
	// NoLog keeps no per-request log (Log returns nothing); for benchmarks.
	NoLog bool
	// ChangeEvery, if positive, makes part of the web change over time
	// and answer conditional requests (change.go); 0: a static web,
	// byte-identical to Respond. ChangeFraction is the share of pages
	// that change (default DefaultChangeFraction); Now is their clock
	// (default time.Now).
	ChangeEvery    time.Duration
	ChangeFraction float64
	Now            func() time.Time
}

// EnsureDefaults fills zero fields.
func (o *Options) EnsureDefaults() {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.ChangeEvery > 0 && o.ChangeFraction == 0 {
		o.ChangeFraction = DefaultChangeFraction
	}
}

// Validate reports a bad listen address.
func (o *Options) Validate() error {
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return fmt.Errorf("simweb: listen %q: %w", o.Listen, err)
	}
	if o.AllowNonLoopback {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: %q", ErrNotLoopback, o.Listen)
	}
	return nil
}

// Request is one entry of the server's request log, as seen by the server.
type Request struct {
	Path   string // request-target: path and query
	Status int
	TLS    bool   // asked over HTTPS
	Proto  string // "HTTP/1.1" or "HTTP/2.0"

	Start time.Time // handler entered
	End   time.Time // last body byte written (or the handler gave up)
}

// Stats are the server's totals.
type Stats struct {
	Requests int64 // requests answered (any status)
	Bytes    int64 // body bytes written
	Active   int64 // requests in progress
}

// Server serves a Web (or a directory of sites) on one loopback listener,
// plain HTTP and HTTPS alike (mux.go), choosing the virtual host by the
// Host header. It is safe for concurrent use and must be Closed.
type Server struct {
	web     *Web
	dir     *dirSites
	opts    Options
	born    time.Time // start, for Options.ChangeEvery
	ln      *muxListener
	certs   *certs
	hs      *http.Server
	ctx     context.Context
	cancel  context.CancelFunc
	serveWG sync.WaitGroup
	mu      struct {
		sync.Mutex
		closed bool
		log    map[string][]Request
	}
	handlers               sync.WaitGroup
	requests, bytes, alive atomic.Int64
}

// Start serves web until Close.
func Start(web *Web, opts Options) (*Server, error) {
	return start(web, nil, opts)
}

func start(web *Web, dir *dirSites, opts Options) (*Server, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("simweb: %w", err)
	}
	s := &Server{web: web, dir: dir, opts: opts}
	s.born = s.now()
	if s.certs, err = makeCerts(s.certNames()); err != nil {
		ln.Close()
		return nil, fmt.Errorf("simweb: certificates: %w", err)
	}
	s.ln = newMux(ln, s.serverTLS())
	s.mu.log = map[string][]Request{}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.hs = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          log.New(io.Discard, "", 0), // clients that hang up are normal here
	}
	s.serveWG.Add(1)
	go pprof.Do(s.ctx, pprof.Labels("simweb", "serve"), func(context.Context) {
		defer s.serveWG.Done()
		_ = s.hs.Serve(s.ln) // net/http serves h2 on a *tls.Conn when ALPN picks it
	})
	return s, nil
}

// Addr is the listener's address, e.g. "127.0.0.1:40123".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Port is the listener's port.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Serves reports whether host (no port) is one of the server's hosts.
func (s *Server) Serves(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if s.dir != nil {
		return s.dir.has(host)
	}
	_, ok := s.web.HostIndex(host)
	return ok
}

// DialContext connects to the server if addr's host is one of the
// server's hosts (other names fail with ErrNotServed), whatever the port
// in addr (the listener serves plain and TLS). As on the real web, a host that
// does not serve a scheme refuses its port (ECONNREFUSED): :80 of an
// HTTPS-only host, :443 of a plain one or of a directory's site. Use it as
// http.Transport.DialContext so that no test touches DNS.
func (s *Server) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if !s.Serves(host) {
		return nil, fmt.Errorf("%w: %q (dial %s %s)", ErrNotServed, host, network, addr)
	}
	if s.dir != nil && port == "443" {
		// A directory of sites is served over plain HTTP, as it was before
		// HTTPS: its sites' https links lead nowhere (tests count on it).
		return nil, errRefused(network, addr)
	}
	if s.web != nil && (port == "443" || port == "80") {
		h, _ := s.web.HostIndex(strings.TrimSuffix(strings.ToLower(host), "."))
		if !s.web.serves(int32(h), port == "443") {
			return nil, errRefused(network, addr)
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", s.Addr())
}

// Client returns an HTTP client that reaches the server's hosts through
// DialContext, trusts the server's CA, speaks h2 where it is offered,
// follows no redirects and does not ask for compression.
func (s *Server) Client() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext: s.DialContext, DisableCompression: true, MaxIdleConnsPerHost: 64,
			Proxy: nil, TLSClientConfig: s.TLSClientConfig(), ForceAttemptHTTP2: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Log returns a copy of the request log: per host name (as sent in the
// Host header, lower case, without port), every request ordered by Start.
func (s *Server) Log() map[string][]Request {
	s.mu.Lock()
	out := make(map[string][]Request, len(s.mu.log))
	for h, l := range s.mu.log {
		out[h] = append([]Request(nil), l...)
	}
	s.mu.Unlock()
	for _, l := range out {
		sort.SliceStable(l, func(i, j int) bool { return l[i].Start.Before(l[j].Start) })
	}
	return out
}

// MaxConcurrent returns the largest number of requests of reqs (one host's
// log) that were in progress at the same instant: 1 for a polite crawl.
func MaxConcurrent(reqs []Request) int {
	type ev struct {
		t     time.Time
		delta int
	}
	evs := make([]ev, 0, 2*len(reqs))
	for _, r := range reqs {
		evs = append(evs, ev{r.Start, +1}, ev{r.End, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t.Equal(evs[j].t) {
			return evs[i].delta < evs[j].delta // an end before a start at the same instant
		}
		return evs[i].t.Before(evs[j].t)
	})
	cur, best := 0, 0
	for _, e := range evs {
		cur += e.delta
		best = max(best, cur)
	}
	return best
}

// MinGap returns the smallest time between the end of a request and the
// start of the next one in reqs (ordered by Start, as Log returns them);
// negative if two overlap, 0 with fewer than two requests.
func MinGap(reqs []Request) time.Duration {
	var gap time.Duration
	for i := 1; i < len(reqs); i++ {
		if g := reqs[i].Start.Sub(reqs[i-1].End); i == 1 || g < gap {
			gap = g
		}
	}
	return gap
}

// Requests returns the server's totals.
func (s *Server) Requests() Stats {
	return Stats{Requests: s.requests.Load(), Bytes: s.bytes.Load(), Active: s.alive.Load()}
}

// Close stops the server, aborts requests in progress and waits for every
// goroutine it started.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	s.mu.Unlock()
	s.cancel()
	err := s.hs.Close()
	s.serveWG.Wait()
	s.handlers.Wait()
	return err
}

// countingWriter counts body bytes.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	s.alive.Add(1)
	defer s.alive.Add(-1)

	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	pq := r.RequestURI
	if !strings.HasPrefix(pq, "/") {
		pq = r.URL.RequestURI()
	}
	cw := &countingWriter{ResponseWriter: rw}
	var status int
	if s.dir != nil {
		status = s.dir.serve(cw, r, host)
	} else {
		status = s.serveWeb(cw, r, host, pq, r.TLS != nil)
	}
	end := time.Now()
	s.requests.Add(1)
	s.bytes.Add(cw.n)
	if !s.opts.NoLog {
		s.mu.Lock()
		s.mu.log[host] = append(s.mu.log[host], Request{Path: pq, Status: status, TLS: r.TLS != nil,
			Proto: r.Proto, Start: start, End: end})
		s.mu.Unlock()
	}
}

func (s *Server) serveWeb(w http.ResponseWriter, r *http.Request, host, pq string, https bool) int {
	h, ok := s.web.HostIndex(host)
	if !ok || (https && !s.web.serves(int32(h), true)) {
		http.Error(w, "simweb: no such host", http.StatusMisdirectedRequest)
		return http.StatusMisdirectedRequest
	}
	if !s.web.serves(int32(h), https) {
		// Only a client that dials the plain listener itself gets here
		// (DialContext refuses): what nginx answers on an HTTPS port.
		http.Error(w, "400 The plain HTTP request was sent to HTTPS port", http.StatusBadRequest)
		return http.StatusBadRequest
	}
	g := s.web.getGen(false)
	defer putGen(g)
	s.web.buildScheme(g, int32(h), pq, https)
	ctx := r.Context()
	if g.latency > 0 && !s.opts.NoLatency {
		t := time.NewTimer(g.latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0
		case <-t.C:
		}
	}
	if st, done := s.versioned(w, r, g, host, pq); done {
		return st
	}
	hd := w.Header()
	if g.noCT {
		hd["Content-Type"] = nil
	}
	g.eachHeader(func(k, v string) { hd[k] = []string{v} })
	w.WriteHeader(g.status)
	if r.Method == http.MethodHead {
		return g.status
	}
	if _, err := w.Write(g.buf); err != nil {
		return g.status
	}
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	_ = writeTail(ctx, s.web, w, flush, g.stall, g.tail, g.tailLen)
	return g.status
}

// Flush lets streamed bodies through the counting wrapper.
func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
