package fetcher

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTest returns a Fetcher for loopback test servers; mod adjusts options.
func newTest(t testing.TB, mod func(*Options)) *Fetcher {
	t.Helper()
	o := Options{AllowPrivate: true, TempDir: t.TempDir(), MemThreshold: 4 << 10}
	if mod != nil {
		mod(&o)
	}
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func serve(t testing.TB, h http.HandlerFunc) *httptest.Server {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func readAll(t testing.TB, b *RewindBuffer) string {
	t.Helper()
	d, err := io.ReadAll(b.NewReader())
	if err != nil {
		t.Fatal(err)
	}
	return string(d)
}

func mustFetch(t testing.TB, f *Fetcher, u string) *Response {
	t.Helper()
	r, err := f.Fetch(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestFetchBasic(t *testing.T) {
	var gotUA, gotAE string
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotAE = r.UserAgent(), r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		io.WriteString(w, "<html>hello</html>")
	})
	f := newTest(t, nil)
	r := mustFetch(t, f, s.URL+"/a")
	if r.Status != 200 || r.ContentType != "text/html" || r.Charset != "utf-8" || r.Location != "" {
		t.Fatalf("got %+v", r)
	}
	if got := readAll(t, r.Body); got != "<html>hello</html>" || r.Bytes != int64(len(got)) || r.Truncated {
		t.Fatalf("body %q bytes %d truncated %v", got, r.Bytes, r.Truncated)
	}
	if r.RemoteIP != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("RemoteIP %v", r.RemoteIP)
	}
	if gotUA != DefaultUserAgent || gotAE != acceptEncoding {
		t.Fatalf("UA %q, Accept-Encoding %q", gotUA, gotAE)
	}
	if st := f.Stats(); st.Fetches != 1 || st.Status2xx != 1 || st.WireBytes != 18 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	var hits atomic.Int32
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/rel":
			http.Redirect(w, r, "../target?q=1#frag", http.StatusMovedPermanently)
		case "/abs":
			w.Header().Set("Location", "http://other.test/x")
			w.WriteHeader(http.StatusFound)
		case "/none":
			w.WriteHeader(http.StatusSeeOther)
		}
	})
	f := newTest(t, nil)
	for path, want := range map[string]string{
		"/rel":  s.URL + "/target?q=1#frag",
		"/abs":  "http://other.test/x",
		"/none": "",
	} {
		r := mustFetch(t, f, s.URL+path)
		if r.Status < 300 || r.Status > 399 || r.Location != want {
			t.Errorf("%s: status %d location %q, want %q", path, r.Status, r.Location, want)
		}
	}
	if hits.Load() != 3 {
		t.Fatalf("server saw %d requests, want 3 (redirects must not be followed)", hits.Load())
	}
	if st := f.Stats(); st.Status3xx != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestContentType(t *testing.T) {
	cases := []struct {
		header, body, wantType, wantCharset string
	}{
		{"Text/HTML; Charset=ISO-8859-1", "x", "text/html", "iso-8859-1"},
		{"application/xhtml+xml", "x", "application/xhtml+xml", ""},
		{"", "<!DOCTYPE html><html><body>sniffed", "text/html", "utf-8"},
		{"", "%PDF-1.4 ...", "application/pdf", ""},
		{"", "", "", ""},
		{"text/html;;; garbage=", "x", "text/html", ""},
		{"image/png", "\x89PNG", "image/png", ""},
	}
	for i, c := range cases {
		s := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if c.header != "" {
				w.Header().Set("Content-Type", c.header)
			} else {
				w.Header()["Content-Type"] = nil // suppress net/http's sniffing
			}
			io.WriteString(w, c.body)
		})
		r := mustFetch(t, newTest(t, nil), s.URL)
		if r.ContentType != c.wantType || r.Charset != c.wantCharset {
			t.Errorf("case %d %q: got %q/%q, want %q/%q", i, c.header, r.ContentType, r.Charset, c.wantType, c.wantCharset)
		}
	}
}

func TestBodyCap(t *testing.T) {
	body := strings.Repeat("0123456789", 10_000) // 100 000 bytes
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	f := newTest(t, func(o *Options) { o.BodyCap = 10_000 })
	r := mustFetch(t, f, s.URL)
	if !r.Truncated || r.Body.Len() != 10_000 || readAll(t, r.Body) != body[:10_000] {
		t.Fatalf("truncated %v len %d", r.Truncated, r.Body.Len())
	}
	// Exactly at the cap is not truncated.
	f2 := newTest(t, func(o *Options) { o.BodyCap = int64(len(body)) })
	r2 := mustFetch(t, f2, s.URL)
	if r2.Truncated || r2.Body.Len() != int64(len(body)) {
		t.Fatalf("at cap: truncated %v len %d", r2.Truncated, r2.Body.Len())
	}
}

// bomb compresses n zero bytes with the named encoding.
func bomb(t testing.TB, enc string, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
	case "br":
		w = brotli.NewWriterLevel(&buf, brotli.BestSpeed)
	case "zstd":
		var err error
		w, err = zstd.NewWriter(&buf, zstd.WithWindowSize(1<<20))
		if err != nil {
			t.Fatal(err)
		}
	}
	zero := make([]byte, 1<<20)
	for i := 0; i < n>>20; i++ {
		w.Write(zero)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecompressionBombs(t *testing.T) {
	const decoded = 64 << 20
	for _, enc := range []string{"gzip", "br", "zstd"} {
		t.Run(enc, func(t *testing.T) {
			z := bomb(t, enc, decoded)
			s := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", enc)
				w.Header().Set("Content-Type", "text/html")
				w.Write(z)
			})
			f := newTest(t, func(o *Options) { o.DecompressCap = 1 << 20 })
			r := mustFetch(t, f, s.URL)
			if !r.Truncated || r.Body.Len() != 1<<20 {
				t.Fatalf("%d compressed bytes: truncated %v len %d", len(z), r.Truncated, r.Body.Len())
			}
			// Below the cap the body decodes in full.
			f2 := newTest(t, func(o *Options) { o.DecompressCap = decoded })
			r2 := mustFetch(t, f2, s.URL)
			if r2.Truncated || r2.Body.Len() != decoded || r2.Bytes != int64(len(z)) {
				t.Fatalf("full: truncated %v len %d bytes %d", r2.Truncated, r2.Body.Len(), r2.Bytes)
			}
		})
	}
}

func TestCompressedCutAtBodyCap(t *testing.T) {
	var plain bytes.Buffer
	for i := 0; plain.Len() < 200_000; i++ {
		fmt.Fprintf(&plain, "line %d %x\n", i, i*7919)
	}
	var z bytes.Buffer
	gw := gzip.NewWriter(&z)
	gw.Write(plain.Bytes())
	gw.Close()
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(z.Bytes())
	})
	f := newTest(t, func(o *Options) { o.BodyCap = int64(z.Len() / 2); o.DecompressCap = 1 << 30 })
	r := mustFetch(t, f, s.URL)
	got := readAll(t, r.Body)
	if !r.Truncated || len(got) == 0 || !strings.HasPrefix(plain.String(), got) || r.Bytes != int64(z.Len()/2) {
		t.Fatalf("truncated %v, decoded %d bytes (prefix ok %v), wire %d", r.Truncated, len(got), strings.HasPrefix(plain.String(), got), r.Bytes)
	}
}

func TestBadEncoding(t *testing.T) {
	for enc, body := range map[string]string{
		"gzip":     "definitely not gzip",
		"compress": "lzw?",
		"zstd":     "\x28\xb5\x2f\xfd garbage frame",
	} {
		s := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", enc)
			io.WriteString(w, body)
		})
		f := newTest(t, nil)
		_, err := f.Fetch(context.Background(), s.URL)
		if !errors.Is(err, ErrEncoding) || IsRetryable(err) {
			t.Errorf("%s: err %v, want non-retryable ErrEncoding", enc, err)
		}
		if n := countFiles(t, f.opts.TempDir); n != 0 {
			t.Errorf("%d temp files left", n)
		}
	}
	// An empty gzip body (as on a 204 or a HEAD-like reply) is fine.
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusNoContent)
	})
	r := mustFetch(t, newTest(t, nil), s.URL)
	if r.Status != 204 || r.Body.Len() != 0 {
		t.Fatalf("got %d len %d", r.Status, r.Body.Len())
	}
}

// blocker lets a handler hang until the test ends.
func blocker(t *testing.T) chan struct{} {
	ch := make(chan struct{})
	t.Cleanup(func() { close(ch) })
	return ch
}

func TestSlowHeaders(t *testing.T) {
	release := blocker(t)
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f := newTest(t, func(o *Options) { o.HeaderTimeout = 100 * time.Millisecond })
	_, err := f.Fetch(context.Background(), s.URL)
	if !errors.Is(err, ErrTimeout) || !IsRetryable(err) {
		t.Fatalf("err %v, want retryable ErrTimeout", err)
	}
	if st := f.Stats(); st.ErrTimeout != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestStallMidBody(t *testing.T) {
	release := blocker(t)
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 64<<10)) // beyond MemThreshold: spills
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f := newTest(t, func(o *Options) { o.FetchTimeout = 300 * time.Millisecond })
	_, err := f.Fetch(context.Background(), s.URL)
	if !errors.Is(err, ErrTimeout) || !IsRetryable(err) {
		t.Fatalf("err %v, want retryable ErrTimeout", err)
	}
	if n := countFiles(t, f.opts.TempDir); n != 0 {
		t.Fatalf("%d temp files left", n)
	}
	if n := countBodyFDs(t); n != 0 {
		t.Fatalf("%d descriptors of spilled bodies still open", n)
	}
}

func TestCallerCancel(t *testing.T) {
	release := blocker(t)
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f := newTest(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := f.Fetch(ctx, s.URL)
	if !errors.Is(err, ErrCanceled) || !IsRetryable(err) {
		t.Fatalf("err %v, want retryable ErrCanceled", err)
	}
}

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

func TestOptionsValidate(t *testing.T) {
	o := Options{RobotsToken: "bad token!", BodyCap: -1, RobotsCacheTTL: 48 * time.Hour,
		Resolve: map[string]string{"x.test": "not-an-ip"}, TempDir: "/nonexistent/dir"}
	_, err := New(o)
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"RobotsToken", "BodyCap", "RobotsCacheTTL", "Resolve", "TempDir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	var d Options
	d.EnsureDefaults()
	if d.BodyCap != 16<<20 || d.DecompressCap != 16<<20 || d.RobotsMaxBytes != 500<<10 || d.RobotsCacheTTL != 24*time.Hour {
		t.Fatalf("defaults %+v", d)
	}
}

func countFiles(t testing.TB, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// countBodyFDs returns the number of open descriptors of spilled bodies
// (unlinked files named sextant-body-*), or 0 where /proc is absent.
func countBodyFDs(t testing.TB) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range es {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, "sextant-body-") {
			n++
		}
	}
	return n
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

func TestEndlessBodyAndShortBody(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/endless":
			chunk := bytes.Repeat([]byte("z"), 32<<10)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/short": // promises more than it sends, then hangs up
			w.Header().Set("Content-Length", "100000")
			w.Write(make([]byte, 1000))
			panic(http.ErrAbortHandler)
		}
	})
	f := newTest(t, func(o *Options) { o.BodyCap = 300 << 10 })
	r := mustFetch(t, f, s.URL+"/endless")
	if !r.Truncated || r.Body.Len() != 300<<10 || !r.Body.Spilled() {
		t.Fatalf("endless: truncated %v len %d", r.Truncated, r.Body.Len())
	}
	_, err := f.Fetch(context.Background(), s.URL+"/short")
	if !errors.Is(err, ErrConnect) || !IsRetryable(err) {
		t.Fatalf("short body: err %v, want retryable ErrConnect", err)
	}
	if n := countBodyFDs(t); n != 1 { // only the endless page's, still open
		t.Fatalf("%d body descriptors open", n)
	}
}

// Pooled decoders recover from a corrupt stream: each encoding decodes a
// good body after a bad one, repeatedly.
func TestDecoderReuseAfterError(t *testing.T) {
	plain := strings.Repeat("reuse me ", 5000)
	good := map[string][]byte{}
	for _, enc := range []string{"gzip", "br", "zstd"} {
		var buf bytes.Buffer
		var w io.WriteCloser
		switch enc {
		case "gzip":
			w = gzip.NewWriter(&buf)
		case "br":
			w = brotli.NewWriter(&buf)
		case "zstd":
			w, _ = zstd.NewWriter(&buf)
		}
		io.WriteString(w, plain)
		w.Close()
		good[enc] = buf.Bytes()
	}
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		enc := r.URL.Query().Get("enc")
		w.Header().Set("Content-Encoding", enc)
		if r.URL.Path == "/bad" {
			b := append([]byte(nil), good[enc][:len(good[enc])/2]...)
			for i := 10; i < len(b); i += 7 {
				b[i] ^= 0x5a
			}
			w.Write(b)
			return
		}
		w.Write(good[enc])
	})
	f := newTest(t, nil)
	for round := 0; round < 3; round++ {
		for enc := range good {
			if r, err := f.Fetch(context.Background(), s.URL+"/bad?enc="+enc); err == nil {
				r.Close() // a corrupt stream may still decode to garbage; either way no panic
			}
			r := mustFetch(t, f, s.URL+"/good?enc="+enc)
			if got := readAll(t, r.Body); got != plain {
				t.Fatalf("%s round %d: decoded %d bytes, want %d", enc, round, len(got), len(plain))
			}
		}
	}
}
