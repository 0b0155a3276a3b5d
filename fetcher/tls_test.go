package fetcher

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// tlsServer starts an httptest TLS server (h2 offered by ALPN if h2) whose
// handshake errors are not printed, and returns it with its root pool.
func tlsServer(t testing.TB, h2 bool, mod func(*httptest.Server), h http.HandlerFunc) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.EnableHTTP2 = h2
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	if mod != nil {
		mod(s)
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return s, pool
}

func trusting(pool *x509.CertPool) func(*Options) {
	return func(o *Options) { o.TLSConfig = &tls.Config{RootCAs: pool} }
}

// silentListener accepts connections and never answers.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() { defer conns.Done(); <-done; c.Close() }()
		}
	}()
	t.Cleanup(func() { l.Close(); close(done); conns.Wait() })
	return l.Addr().String()
}

// expiredServer serves TLS with a certificate for 127.0.0.1 that expired
// half an hour ago, signed by a CA it returns the pool of.
func expiredServer(t *testing.T) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	ca, err := tlsutil.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("expired.test", []string{"127.0.0.1"}, -30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	s.StartTLS()
	t.Cleanup(s.Close)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return s, pool
}

// Every TLS failure names its cause (errors.Is a kind sentinel), is
// counted by kind, and only a timeout is retryable.
func TestTLSFailureKinds(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }
	good, pool := tlsServer(t, false, nil, ok)
	_, port, _ := net.SplitHostPort(good.Listener.Addr().String())
	old, oldPool := tlsServer(t, false, func(s *httptest.Server) {
		s.TLS = &tls.Config{MaxVersion: tls.VersionTLS12}
	}, ok)
	expired, expiredPool := expiredServer(t)
	plain := serve(t, ok)
	silent := silentListener(t)

	for _, tc := range []struct {
		name  string
		url   string
		mod   func(*Options)
		kind  error
		class error
		count func(Stats) int64
	}{
		{"unknown authority", good.URL, nil, ErrCertUnknownAuthority, ErrTLS,
			func(s Stats) int64 { return s.TLSUnknownAuthority }},
		{"hostname mismatch", "https://wrong.test:" + port + "/", func(o *Options) {
			trusting(pool)(o)
			o.Resolve = map[string]string{"wrong.test": "127.0.0.1"}
		}, ErrCertHostname, ErrTLS, func(s Stats) int64 { return s.TLSHostname }},
		{"expired", expired.URL, trusting(expiredPool), ErrCertExpired, ErrTLS,
			func(s Stats) int64 { return s.TLSExpired }},
		{"handshake alert", old.URL, func(o *Options) {
			o.TLSConfig = &tls.Config{RootCAs: oldPool, MinVersion: tls.VersionTLS13}
		}, ErrTLSHandshake, ErrTLS, func(s Stats) int64 { return s.TLSHandshakeFailed }},
		{"plain http on https", "https://" + strings.TrimPrefix(plain.URL, "http://") + "/", nil,
			ErrNotTLS, ErrTLS, func(s Stats) int64 { return s.TLSNotTLS }},
		{"handshake timeout", "https://" + silent + "/", func(o *Options) { o.TLSTimeout = 100 * time.Millisecond },
			ErrTLSTimeout, ErrTimeout, func(s Stats) int64 { return s.TLSTimeout }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTest(t, tc.mod)
			start := time.Now()
			_, err := f.Fetch(context.Background(), tc.url)
			if !errors.Is(err, tc.kind) || !errors.Is(err, tc.class) || Kind(err) != tc.kind {
				t.Fatalf("err %v: want class %v, kind %v", err, tc.class, tc.kind)
			}
			if !strings.Contains(err.Error(), tc.kind.Error()) {
				t.Errorf("error %q does not name its cause %q", err, tc.kind)
			}
			if got, want := IsRetryable(err), tc.kind == ErrTLSTimeout; got != want {
				t.Errorf("retryable %v, want %v", got, want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			if n := tc.count(f.Stats()); n != 1 {
				t.Errorf("kind counter %d, want 1 (stats %+v)", n, f.Stats())
			}
		})
	}
}

// DNS failures are classified by kind, whatever the resolver returns.
func TestDNSFailureKinds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resolve   ResolveFunc
		kind      error
		class     error
		retryable bool
		count     func(Stats) int64
	}{
		{"no such host", func(ctx context.Context, host string) ([]netip.Addr, error) {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}, ErrDNSNotFound, ErrDNS, false, func(s Stats) int64 { return s.DNSNotFound }},
		{"no addresses", func(ctx context.Context, host string) ([]netip.Addr, error) {
			return nil, nil
		}, ErrDNSNotFound, ErrDNS, false, func(s Stats) int64 { return s.DNSNotFound }},
		{"timeout", func(ctx context.Context, host string) ([]netip.Addr, error) {
			<-ctx.Done() // a resolver that answers nothing until the lookup's deadline
			return nil, ctx.Err()
		}, ErrDNSTimeout, ErrTimeout, true, func(s Stats) int64 { return s.DNSTimeout }},
		{"server failure", func(ctx context.Context, host string) ([]netip.Addr, error) {
			return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
		}, ErrDNSOther, ErrDNS, true, func(s Stats) int64 { return s.DNSOther }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTest(t, func(o *Options) { o.Resolver = tc.resolve; o.DialTimeout = 100 * time.Millisecond })
			_, err := f.Fetch(context.Background(), "http://site.example/")
			if !errors.Is(err, tc.kind) || !errors.Is(err, tc.class) {
				t.Fatalf("err %v: want class %v, kind %v", err, tc.class, tc.kind)
			}
			if IsRetryable(err) != tc.retryable {
				t.Errorf("retryable %v, want %v", IsRetryable(err), tc.retryable)
			}
			if n := tc.count(f.Stats()); n != 1 {
				t.Errorf("kind counter %d, want 1", n)
			}
		})
	}
}

// An untrusted certificate on robots.txt is a verdict, not an outage: the
// rules say so at once, with the cause, instead of asking the caller to
// retry at 5 and 15 s and then calling it "unreachable". (Failed on the
// old code: Retry was set and Err named no kind.)
func TestRobotsUntrustedCertNotRetried(t *testing.T) {
	var hits atomic.Int64
	s, _ := tlsServer(t, false, nil, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	var logged strings.Builder
	var mu sync.Mutex
	f := newTest(t, func(o *Options) {
		o.Logger = newTestLogger(&mu, &logged)
	})
	host := strings.TrimPrefix(s.URL, "https://")
	start := time.Now()
	rules, fetched, _, err := f.Robots(context.Background(), "https", host)
	if err != nil || !fetched {
		t.Fatalf("robots: %v fetched %v", err, fetched)
	}
	if rules.Outcome != RobotsUnreachable || rules.Retry {
		t.Fatalf("outcome %v retry %v, want unreachable without retry", rules.Outcome, rules.Retry)
	}
	if !errors.Is(rules.Err, ErrCertUnknownAuthority) || !errors.Is(rules.Err, ErrTLS) {
		t.Fatalf("rules.Err %v does not name the cause", rules.Err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("verdict took %v", d)
	}
	if rules.Allowed(s.URL + "/page") {
		t.Error("allowed")
	}
	mu.Lock()
	line := logged.String()
	mu.Unlock()
	if !strings.Contains(line, "robots.txt unreachable") || !strings.Contains(line, ErrCertUnknownAuthority.Error()) {
		t.Errorf("log does not name the cause: %q", line)
	}
	if st := f.Stats(); st.TLSUnknownAuthority != 1 || st.RobotsUnreachable != 1 {
		t.Errorf("stats: unknown authority %d, robots unreachable %d", st.TLSUnknownAuthority, st.RobotsUnreachable)
	}
	if hits.Load() != 0 {
		t.Error("a request was served over an untrusted connection")
	}
}

// HTTP/2 is used when the server offers it by ALPN, HTTP/1.1 otherwise;
// Response.Proto says which. Requests to one host, one after the other,
// share one connection, and the caps hold over h2.
func TestHTTP2(t *testing.T) {
	gzipBomb := bomb(t, "gzip", 1<<20)
	for _, tc := range []struct {
		name    string
		h2      bool
		disable bool
		proto   string
	}{
		{"h2 offered", true, false, "HTTP/2.0"},
		{"h1 only server", false, false, "HTTP/1.1"},
		{"h2 offered, DisableHTTP2", true, true, "HTTP/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			s, pool := tlsServer(t, tc.h2, func(s *httptest.Server) {
				s.Config.ConnState = func(c net.Conn, st http.ConnState) {
					if st == http.StateNew {
						conns.Add(1)
					}
				}
			}, func(w http.ResponseWriter, r *http.Request) {
				if r.Proto != tc.proto {
					t.Errorf("server saw %s, want %s", r.Proto, tc.proto)
				}
				switch r.URL.Path {
				case "/robots.txt":
					io.WriteString(w, "User-agent: *\nDisallow: /private\n")
				case "/big":
					io.WriteString(w, strings.Repeat("x", 10000))
				case "/bomb":
					w.Header().Set("Content-Encoding", "gzip")
					w.Write(gzipBomb)
				case "/header":
					w.Header().Set("X-Big", strings.Repeat("h", 300<<10))
				default:
					io.WriteString(w, "page "+r.URL.Path)
				}
			})
			f := newTest(t, func(o *Options) {
				trusting(pool)(o)
				o.DisableHTTP2 = tc.disable
				o.BodyCap, o.DecompressCap = 6000, 2000
			})
			host := strings.TrimPrefix(s.URL, "https://")
			rules, _, _, err := f.Robots(context.Background(), "https", host)
			if err != nil || rules.Outcome != RobotsParsed || rules.Allowed(s.URL+"/private") {
				t.Fatalf("robots over %s: %v %+v", tc.proto, err, rules)
			}
			for i := range 5 {
				r := mustFetch(t, f, s.URL+"/p"+string(rune('0'+i)))
				if r.Proto != tc.proto {
					t.Fatalf("Proto %q, want %q", r.Proto, tc.proto)
				}
				if got := readAll(t, r.Body); got != "page /p"+string(rune('0'+i)) {
					t.Fatalf("body %q", got)
				}
			}
			if n := conns.Load(); n != 1 {
				t.Errorf("%d connections for sequential requests to one host, want 1", n)
			}
			// (Below, a truncated HTTP/1.1 body closes its connection.)
			if r := mustFetch(t, f, s.URL+"/big"); !r.Truncated || r.Body.Len() != 2000 {
				t.Errorf("body cap over %s: truncated %v len %d", tc.proto, r.Truncated, r.Body.Len())
			}
			// The transport leaves decoding to us (with its cap) over h2 too.
			if r := mustFetch(t, f, s.URL+"/bomb"); !r.Truncated || r.Body.Len() != 2000 || r.Bytes != int64(len(gzipBomb)) {
				t.Errorf("gzip bomb over %s: truncated %v len %d wire %d", tc.proto, r.Truncated, r.Body.Len(), r.Bytes)
			}
			if _, err := f.Fetch(context.Background(), s.URL+"/header"); err == nil {
				t.Errorf("a 300 KiB header passed over %s", tc.proto)
			}
			want := int64(0)
			if tc.proto == "HTTP/2.0" {
				want = 8 // robots.txt, 5 pages, /big, /bomb
			}
			if n := f.Stats().HTTP2; n != want {
				t.Errorf("Stats.HTTP2 %d, want %d", n, want)
			}
		})
	}
	// The guard judges h2 connections like any other.
	s, pool := tlsServer(t, true, nil, func(w http.ResponseWriter, r *http.Request) {})
	f := newTest(t, func(o *Options) { trusting(pool)(o); o.AllowPrivate = false })
	if _, err := f.Fetch(context.Background(), s.URL); !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("h2 server on loopback without AllowPrivate: %v", err)
	}
}

// The second connection to a host resumes the TLS session of the first.
// (Failed on the old code: no ClientSessionCache, DidResume false.)
func TestTLSSessionResumption(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		var resumed []bool
		var mu sync.Mutex
		s, pool := tlsServer(t, h2, nil, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			resumed = append(resumed, r.TLS.DidResume)
			mu.Unlock()
			io.WriteString(w, "ok")
		})
		f := newTest(t, trusting(pool))
		for range 3 {
			mustFetch(t, f, s.URL)
			f.tr.CloseIdleConnections() // the next fetch needs a new connection
		}
		mu.Lock()
		got := append([]bool(nil), resumed...)
		mu.Unlock()
		if len(got) != 3 || got[0] || !got[1] || !got[2] {
			t.Errorf("h2 %v: server saw DidResume %v, want [false true true]", h2, got)
		}
		if st := f.Stats(); st.TLSHandshakes != 3 || st.TLSResumed != 2 {
			t.Errorf("h2 %v: handshakes %d resumed %d, want 3 and 2", h2, st.TLSHandshakes, st.TLSResumed)
		}
	}
}

// lockedWriter serialises writes of a logger into a strings.Builder.
type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func newTestLogger(mu *sync.Mutex, b *strings.Builder) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{mu, b}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Over HTTP/2 the header timeout and the whole-fetch deadline end a
// stalled stream, and the host's next request, on the same connection,
// is served: a stalled stream does not poison the shared connection.
func TestHTTP2Stalls(t *testing.T) {
	release := blocker(t)
	var conns atomic.Int64
	s, pool := tlsServer(t, true, func(s *httptest.Server) {
		s.Config.ConnState = func(c net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		}
	}, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow-headers":
		case "/stall-body":
			w.Write(make([]byte, 64<<10))
			w.(http.Flusher).Flush()
		default:
			io.WriteString(w, "ok")
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f := newTest(t, func(o *Options) {
		trusting(pool)(o)
		o.HeaderTimeout, o.FetchTimeout = 100*time.Millisecond, 300*time.Millisecond
	})
	if r := mustFetch(t, f, s.URL+"/"); r.Proto != "HTTP/2.0" {
		t.Fatalf("proto %s", r.Proto)
	}
	for _, path := range []string{"/slow-headers", "/stall-body"} {
		start := time.Now()
		_, err := f.Fetch(context.Background(), s.URL+path)
		if !errors.Is(err, ErrTimeout) || !IsRetryable(err) {
			t.Fatalf("%s over h2: err %v, want retryable ErrTimeout", path, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s over h2 took %v", path, d)
		}
		if r := mustFetch(t, f, s.URL+"/after"); readAll(t, r.Body) != "ok" {
			t.Fatalf("the request after %s failed", path)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections: a stalled stream cost the host its connection", n)
	}
	if n := countFiles(t, f.opts.TempDir); n != 0 {
		t.Errorf("%d temp files left", n)
	}
}

// HTTP/2 connections escape http.Transport's MaxIdleConns (they live in
// the h2 pool): the Fetcher sweeps idle ones when more than MaxIdleConns
// are open, so a crawl over many h2 hosts does not hold one connection per
// host until IdleConnTimeout. (Failed before the sweep: 6 h2 connections
// stayed open with MaxIdleConns 2.) The open-connection gauge returns to
// zero once the servers close them.
func TestIdleBoundHTTP2(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		var open atomic.Int64
		pool := x509.NewCertPool()
		var servers []*httptest.Server
		for range 6 {
			s, _ := tlsServer(t, h2, func(s *httptest.Server) {
				s.Config.ConnState = func(c net.Conn, st http.ConnState) {
					switch st {
					case http.StateNew:
						open.Add(1)
					case http.StateClosed, http.StateHijacked:
						open.Add(-1)
					}
				}
			}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
			pool.AddCert(s.Certificate())
			servers = append(servers, s)
		}
		f := newTest(t, func(o *Options) {
			o.TLSConfig = &tls.Config{RootCAs: pool}
			o.MaxIdleConns = 2
		})
		for _, s := range servers {
			mustFetch(t, f, s.URL)
		}
		// The bound is applied as each fetch starts: at most
		// MaxIdleConns + 1 idle between fetches.
		waitFor(t, func() bool { return open.Load() <= 3 }, "h2 %v: %d connections open on the servers, want ≤ 3", h2, &open)
		st := f.Stats()
		if st.ConnsOpen > 3 {
			t.Errorf("h2 %v: Stats.ConnsOpen %d", h2, st.ConnsOpen)
		}
		if h2 && st.IdleSweeps == 0 || !h2 && st.IdleSweeps != 0 {
			t.Errorf("h2 %v: %d sweeps (the transport bounds HTTP/1.1 itself)", h2, st.IdleSweeps)
		}
		for _, s := range servers {
			s.CloseClientConnections()
		}
		waitFor(t, func() bool { return f.Stats().ConnsOpen == 0 }, "h2 %v: ConnsOpen stays at %d after the servers closed", h2, &f.dialer.open)
		if n := f.dialer.h2open.Load(); n != 0 {
			t.Errorf("h2 %v: %d h2 connections counted after all closed", h2, n)
		}
	}
}

// waitFor polls cond for up to 5 s, then fails with msg (whose last
// argument, an *atomic.Int64, is printed as its value).
func waitFor(t *testing.T, cond func() bool, msg string, h2 bool, n *atomic.Int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf(msg, h2, n.Load())
		}
	}
}
