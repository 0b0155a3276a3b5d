package fetcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestBadURLAndRefused(t *testing.T) {
	f := newTest(t, nil)
	for _, u := range []string{"ftp://x.test/", "mailto:a@b", "http:///nohost", "http://[::1"} {
		if _, err := f.Fetch(context.Background(), u); !errors.Is(err, ErrBadURL) || IsRetryable(err) {
			t.Errorf("%s: err %v, want ErrBadURL", u, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = f.Fetch(context.Background(), "http://"+addr+"/")
	if !errors.Is(err, ErrConnect) || !IsRetryable(err) {
		t.Fatalf("closed port: err %v, want retryable ErrConnect", err)
	}
}

func TestDefaultRefusesLoopback(t *testing.T) {
	var hits atomic.Int32
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	port := s.Listener.Addr().(*net.TCPAddr).Port
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, s.Listener.Addr().String())
	}
	for name, o := range map[string]Options{
		"literal": {},
		"resolve": {Resolve: map[string]string{"sim.test": fmt.Sprintf("127.0.0.1:%d", port)}},
		"resolver": {Resolver: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}},
		"dialctx":  {DialContext: dial},
		"metadata": {Resolve: map[string]string{"sim.test": "169.254.169.254"}, DialTimeout: 50 * time.Millisecond},
	} {
		o.TempDir = t.TempDir()
		f, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		u := s.URL
		if name != "literal" {
			u = fmt.Sprintf("http://h1.sim.test:%d/", port)
		}
		_, err = f.Fetch(context.Background(), u)
		f.Close()
		if !errors.Is(err, ErrPrivateAddress) || IsRetryable(err) {
			t.Errorf("%s: err %v, want ErrPrivateAddress", name, err)
			continue
		}
		want := "127.0.0.1"
		if name == "metadata" {
			want = "169.254.169.254"
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not name %s", name, err, want)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("server was reached %d times", hits.Load())
	}
}

func TestResolveAndOverrideWhenAllowed(t *testing.T) {
	var hosts sync.Map
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { hosts.Store(r.Host, true) })
	port := s.Listener.Addr().(*net.TCPAddr).Port
	f := newTest(t, func(o *Options) {
		o.Resolve = map[string]string{"sim.test": s.Listener.Addr().String()}
	})
	mustFetch(t, f, "http://H7.Sim.Test/") // port 80 replaced by the map's
	if _, ok := hosts.Load("H7.Sim.Test"); !ok {
		t.Fatal("Host header not preserved through Resolve")
	}
	var dialled atomic.Int32
	g := newTest(t, func(o *Options) {
		o.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialled.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, s.Listener.Addr().String())
		}
	})
	mustFetch(t, g, fmt.Sprintf("http://h9.sim.test:%d/", port))
	if dialled.Load() != 1 {
		t.Fatalf("override dialled %d times", dialled.Load())
	}
}

func TestDNSCache(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close") // every fetch dials again
	})
	port := s.Listener.Addr().(*net.TCPAddr).Port
	var lookups atomic.Int32
	now := time.Unix(1e9, 0)
	f := newTest(t, func(o *Options) {
		o.Resolver = func(ctx context.Context, host string) ([]netip.Addr, error) {
			lookups.Add(1)
			if host != "a.test" {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		o.Now = func() time.Time { return now }
		o.DNSCacheTTL = time.Minute
	})
	u := fmt.Sprintf("http://a.test:%d/", port)
	mustFetch(t, f, u)
	mustFetch(t, f, u)
	if lookups.Load() != 1 {
		t.Fatalf("%d lookups, want 1 (cached)", lookups.Load())
	}
	now = now.Add(2 * time.Minute)
	mustFetch(t, f, u)
	if lookups.Load() != 2 {
		t.Fatalf("%d lookups after TTL, want 2", lookups.Load())
	}
	_, err := f.Fetch(context.Background(), fmt.Sprintf("http://nx.test:%d/", port))
	if !errors.Is(err, ErrDNS) || IsRetryable(err) {
		t.Fatalf("err %v, want non-retryable ErrDNS", err)
	}
	if st := f.Stats(); st.DNSHits != 1 || st.DNSMisses != 3 || st.ErrDNS != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestConnectionReuse(t *testing.T) {
	var conns atomic.Int32
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("y", 20_000)) // chunked
	}))
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	f := newTest(t, nil)
	for i := 0; i < 20; i++ {
		r, err := f.Fetch(context.Background(), s.URL)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	if conns.Load() != 1 {
		t.Fatalf("%d connections for 20 sequential fetches, want 1", conns.Load())
	}
}

func TestHTTPS(t *testing.T) {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure")
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below is expected
	s.StartTLS()
	t.Cleanup(s.Close)
	f := newTest(t, func(o *Options) {
		o.TLSConfig = s.Client().Transport.(*http.Transport).TLSClientConfig
	})
	if r := mustFetch(t, f, s.URL); readAll(t, r.Body) != "secure" {
		t.Fatal("body")
	}
	// Without the test root the certificate is refused, permanently.
	g := newTest(t, nil)
	if _, err := g.Fetch(context.Background(), s.URL); err == nil || IsRetryable(err) {
		t.Fatalf("untrusted certificate: err %v", err)
	}
}

func TestTLSHandshakeTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	done := make(chan struct{})
	go func() { // accept and say nothing
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
	f := newTest(t, func(o *Options) { o.TLSTimeout = 100 * time.Millisecond })
	_, err = f.Fetch(context.Background(), "https://"+l.Addr().String()+"/")
	if !errors.Is(err, ErrTimeout) || !IsRetryable(err) {
		t.Fatalf("err %v, want retryable ErrTimeout", err)
	}
}

// A lookup shared by concurrent dials survives the cancellation of the
// caller that started it.
func TestDNSSharedLookupSurvivesCancel(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	port := s.Listener.Addr().(*net.TCPAddr).Port
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f := newTest(t, func(o *Options) {
		o.Resolver = func(ctx context.Context, host string) ([]netip.Addr, error) {
			once.Do(func() { close(started) })
			select {
			case <-release:
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	})
	u := fmt.Sprintf("http://shared.test:%d/", port)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := f.Fetch(ctx, u); first <- err }()
	<-started
	second := make(chan error, 1)
	go func() {
		r, err := f.Fetch(context.Background(), u)
		if err == nil {
			r.Close()
		}
		second <- err
	}()
	cancel()
	if err := <-first; !errors.Is(err, ErrCanceled) {
		t.Fatalf("first: %v", err)
	}
	close(release)
	if err := <-second; err != nil {
		t.Fatalf("second fetch failed with the first caller's cancellation: %v", err)
	}
}
