package fetcher

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"
)

// bucketOf returns the index of the bucket of h holding all its
// observations, or -1 if they are spread.
func bucketOf(h Histogram) int {
	for i, c := range h.Counts {
		if c == h.Count && c > 0 {
			return i
		}
	}
	return -1
}

// TestTTFBHistogram: a server that waits before its header puts every
// fetch's time to first byte in the bucket holding the wait, and the whole
// fetch (which also waits for the body) in the same or a later one.
func TestTTFBHistogram(t *testing.T) {
	const wait = 120 * time.Millisecond // in FetchBounds' (0.1, 0.25]
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(wait)
		fmt.Fprint(w, "<html>late</html>")
	}))
	defer s.Close()
	f, err := New(Options{AllowPrivate: true, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 3 {
		r, err := f.Fetch(context.Background(), s.URL+"/")
		if err != nil {
			t.Fatal(err)
		}
		if r.TTFB < wait || r.TTFB > r.Duration {
			t.Errorf("TTFB %v: want ≥ %v and ≤ the fetch's %v", r.TTFB, wait, r.Duration)
		}
		r.Close()
	}
	st := f.Stats()
	if st.TTFBSeconds.Count != 3 || st.FetchSeconds.Count != 3 {
		t.Fatalf("observations: ttfb %d, fetch %d; want 3 each", st.TTFBSeconds.Count, st.FetchSeconds.Count)
	}
	b := bucketOf(st.TTFBSeconds)
	if b < 1 || st.TTFBSeconds.Bounds[b-1] >= wait.Seconds() || st.TTFBSeconds.Bounds[b] < wait.Seconds() {
		t.Errorf("TTFB counts %v over bounds %v: want all 3 in the bucket holding %v", st.TTFBSeconds.Counts, st.TTFBSeconds.Bounds, wait)
	}
	if fb := bucketOf(st.FetchSeconds); fb < b {
		t.Errorf("fetch counts %v: want all at or above TTFB's bucket %d", st.FetchSeconds.Counts, b)
	}
	if st.DNSSeconds.Count != 0 || st.TLSSeconds.Count != 0 {
		t.Errorf("an IP literal over plain HTTP made DNS %d and TLS %d observations", st.DNSSeconds.Count, st.TLSSeconds.Count)
	}
}

// TestStatusClassCounts: fetches are counted exactly by status class, and
// failures apart.
func TestStatusClassCounts(t *testing.T) {
	codes := map[string]int{"/ok": 200, "/nc": 204, "/moved": 301, "/nm": 304, "/gone": 404, "/teapot": 418, "/down": 503}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			w.Header().Set("Location", "/ok")
		}
		w.WriteHeader(codes[r.URL.Path])
	}))
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/"
	ln.Close()
	f, err := New(Options{AllowPrivate: true, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plan := map[string]int{"/ok": 3, "/nc": 1, "/moved": 2, "/nm": 1, "/gone": 4, "/teapot": 1, "/down": 2}
	for p, n := range plan {
		for range n {
			r, err := f.Fetch(context.Background(), s.URL+p)
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
		}
	}
	if _, err := f.Fetch(context.Background(), refused); err == nil {
		t.Fatal("a closed port answered")
	}
	st := f.Stats()
	got := [...]int64{st.Status1xx, st.Status2xx, st.Status3xx, st.Status4xx, st.Status5xx, st.StatusOther, st.ErrConnect}
	want := [...]int64{0, 4, 3, 5, 2, 0, 1}
	if got != want {
		t.Errorf("1xx 2xx 3xx 4xx 5xx other connect-errors = %v, want %v", got, want)
	}
	if st.Fetches != 15 || st.FetchSeconds.Count != 15 || st.TTFBSeconds.Count != 14 {
		t.Errorf("fetches %d, fetch-time observations %d, ttfb %d; want 15, 15, 14", st.Fetches, st.FetchSeconds.Count, st.TTFBSeconds.Count)
	}
}

// TestDNSAndTLSHistograms: each DNS query the fetcher makes (not its cache
// hits) and each TLS handshake is observed once.
func TestDNSAndTLSHistograms(t *testing.T) {
	const wait = 30 * time.Millisecond // in NetBounds' (0.025, 0.05]
	s, pool := tlsServer(t, false, nil, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	u, _ := url.Parse(s.URL)
	var mu sync.Mutex
	queries := 0
	f, err := New(Options{AllowPrivate: true, TempDir: t.TempDir(), TLSConfig: &tls.Config{RootCAs: pool},
		Resolver: func(ctx context.Context, host string) ([]netip.Addr, error) {
			mu.Lock()
			queries++
			mu.Unlock()
			time.Sleep(wait)
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// example.com is a name the httptest certificate holds.
	for range 2 {
		r, err := f.Fetch(context.Background(), "https://example.com:"+u.Port()+"/")
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	st := f.Stats()
	if queries != 1 || st.DNSSeconds.Count != 1 {
		t.Fatalf("%d queries, %d DNS observations; want 1 each (the second fetch hits the cache)", queries, st.DNSSeconds.Count)
	}
	if b := bucketOf(st.DNSSeconds); b < 1 || st.DNSSeconds.Bounds[b-1] >= wait.Seconds() || st.DNSSeconds.Bounds[b] < wait.Seconds() {
		t.Errorf("DNS counts %v over %v: want the query in the bucket holding %v", st.DNSSeconds.Counts, st.DNSSeconds.Bounds, wait)
	}
	if st.TLSHandshakes != 1 || st.TLSSeconds.Count != 1 {
		t.Errorf("%d handshakes, %d TLS observations; want 1 each (the second fetch reuses the connection)", st.TLSHandshakes, st.TLSSeconds.Count)
	}
}

// TestTraceReuseKeepsRemoteIP: pooled traces do not leak one fetch's
// remote address into another's (two servers, interleaved fetches).
func TestTraceReuseKeepsRemoteIP(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "x") })
	a := httptest.NewServer(h)
	defer a.Close()
	b := httptest.NewUnstartedServer(h)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	b.Listener.Close()
	b.Listener = ln
	b.Start()
	defer b.Close()
	f, err := New(Options{AllowPrivate: true, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for _, s := range []*httptest.Server{a, b, a, b} {
		want := netip.MustParseAddrPort(s.Listener.Addr().String()).Addr()
		wg.Go(func() {
			for range 25 {
				r, err := f.Fetch(context.Background(), s.URL+"/")
				if err != nil {
					errs <- err
					return
				}
				if r.RemoteIP != want {
					errs <- fmt.Errorf("fetch of %s: RemoteIP %v", s.URL, r.RemoteIP)
				}
				r.Close()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := f.Stats(); st.FetchSeconds.Count != 100 || st.TTFBSeconds.Count != 100 {
		t.Errorf("observations: fetch %d, ttfb %d; want 100", st.FetchSeconds.Count, st.TTFBSeconds.Count)
	}
}
