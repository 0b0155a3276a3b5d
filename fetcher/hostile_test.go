package fetcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/hostile"
)

// The tests in this file drive a real Fetcher against internal/hostile, a
// loopback server that misbehaves like the worst of the open web. Each case
// asserts a classified error, bounded time and, where a server could make
// us allocate, bounded allocation.

func startHostile(t testing.TB) *hostile.Server {
	t.Helper()
	s, err := hostile.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// allocated returns the bytes allocated (by the whole process: the server
// too) while fn runs: an upper bound on the heap growth fn causes. Two
// collections first empty the sync.Pools, so pooled decoders are paid for.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// fetchWithin fetches u and fails the test if the fetch takes longer than
// limit, a bound far above the fetcher's own timeouts (the machine is
// shared): it catches a missing timeout, not a slow one.
func fetchWithin(t *testing.T, f *Fetcher, u string, limit time.Duration) (*Response, error) {
	t.Helper()
	start := time.Now()
	r, err := f.Fetch(context.Background(), u)
	if d := time.Since(start); d > limit {
		t.Errorf("%s took %v, bound %v", u, d, limit)
	}
	if r != nil {
		t.Cleanup(func() { r.Close() })
	}
	return r, err
}

func TestHostileStackedEncodings(t *testing.T) {
	s := startHostile(t)
	f := newTest(t, nil)
	var ok []string
	for n := 1; n <= MaxContentCodings; n++ {
		ok = append(ok, fmt.Sprintf("n=%d", n), fmt.Sprintf("n=%d&lines=1", n))
	}
	for _, q := range append(ok, "enc=zstd", "enc=gzip,zstd", "enc=zstd,gzip,gzip,gzip,gzip") {
		r, err := fetchWithin(t, f, s.URL+"/stacked?"+q, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := readAll(t, r.Body); got != hostile.Plain {
			t.Fatalf("%s: decoded %q", q, got)
		}
	}
	refused := 0
	for _, q := range []string{"n=6", "n=6&lines=1", "enc=zstd&n=2", "enc=zstd,gzip,zstd", "n=1000", "n=1000&lines=1"} {
		_, err := fetchWithin(t, f, s.URL+"/stacked?"+q, 30*time.Second)
		refused++
		if !errors.Is(err, ErrEncoding) || !errors.Is(err, ErrTooManyEncodings) || IsRetryable(err) {
			t.Errorf("%s: err %v, want non-retryable ErrEncoding wrapping ErrTooManyEncodings", q, err)
		}
	}
	if st := f.Stats(); st.ErrTooManyEncodings != int64(refused) || st.ErrEncoding != int64(refused) {
		t.Errorf("stats: %d too many codings, %d encoding errors; want %d each", st.ErrTooManyEncodings, st.ErrEncoding, refused)
	}
	// 1,000 layers cost ≈ 41 MB of decoders without the bound; with it the
	// refusal costs the header's parsing. The body was built (and cached by
	// the server) above.
	b := allocated(func() { f.Fetch(context.Background(), s.URL+"/stacked?n=1000") })
	t.Logf("1,000 stacked codings: %d bytes allocated", b)
	if b > 2<<20 {
		t.Errorf("1,000 stacked codings allocated %d bytes, want ≤ 2 MiB", b)
	}
}

// A zstd layer holds a window of up to 8 MiB once its content exceeds it
// (a brotli one up to 16 MiB): five such layers of 9 MiB of random bytes
// cost 42 MiB (80 MiB in brotli) for a 9 MiB body. One is decoded, within
// the body cap; a second is refused before any decoder is made.
func TestHostileStackedLargeWindows(t *testing.T) {
	s := startHostile(t)
	f := newTest(t, nil)
	for _, c := range []struct {
		q     string
		bound uint64
		err   error
	}{
		{"enc=gzip,gzip,gzip,gzip,zstd&size=9437184", DefaultBodyCap, nil},
		{"enc=zstd&n=5&size=9437184", 2 << 20, ErrTooManyEncodings},
		{"enc=zstd,gzip&n=2&size=9437184", 2 << 20, ErrTooManyEncodings},
	} {
		u := s.URL + "/stacked?" + c.q
		if r, err := f.Fetch(context.Background(), u); err == nil { // the server builds and caches the body
			r.Close()
		}
		var err error
		var n int64
		b := allocated(func() {
			var r *Response
			if r, err = f.Fetch(context.Background(), u); err == nil {
				n = r.Body.Len()
				r.Close()
			}
		})
		t.Logf("%s: %d bytes allocated, %d decoded, %v", c.q, b, n, err)
		if !errors.Is(err, c.err) || c.err == nil && n != 9437184 {
			t.Errorf("%s: err %v, %d bytes decoded; want err %v", c.q, err, n, c.err)
		}
		if b > c.bound {
			t.Errorf("%s allocated %d bytes, want ≤ %d", c.q, b, c.bound)
		}
	}
}

func TestHostileSlowloris(t *testing.T) {
	s := startHostile(t)
	f := newTest(t, func(o *Options) { o.HeaderTimeout, o.FetchTimeout = time.Second, 2*time.Second })
	for _, path := range []string{"/slow-headers", "/slow-body"} {
		_, err := fetchWithin(t, f, s.URL+path, 20*time.Second)
		if !errors.Is(err, ErrTimeout) || !IsRetryable(err) {
			t.Errorf("%s: err %v, want retryable ErrTimeout", path, err)
		}
	}
	if n := countFiles(t, f.opts.TempDir); n != 0 {
		t.Errorf("%d temp files left", n)
	}
}

func TestHostileHeaderFloods(t *testing.T) {
	s := startHostile(t)
	f := newTest(t, nil)
	// 10,000 header lines fit in the 256 KiB header limit: accepted, at
	// the cost of their map.
	var r *Response
	var err error
	b := allocated(func() { r, err = fetchWithin(t, f, s.URL+"/many-headers?n=10000", 30*time.Second) })
	if err != nil || r.Status != 200 || len(r.Header) < 10000 {
		t.Fatalf("10,000 headers: err %v", err)
	}
	t.Logf("10,000 headers: %d bytes allocated", b)
	if b > 16<<20 {
		t.Errorf("10,000 headers allocated %d bytes, want ≤ 16 MiB", b)
	}
	// Beyond the limit, and 100,000 informational responses (whose headers
	// count against the same limit): a protocol error, not a hang.
	for _, path := range []string{"/many-headers?n=100000", "/informational?n=100000"} {
		b := allocated(func() { _, err = fetchWithin(t, f, s.URL+path, 30*time.Second) })
		if !errors.Is(err, ErrOther) || IsRetryable(err) || !strings.Contains(err.Error(), "exceeded") {
			t.Errorf("%s: err %v, want non-retryable ErrOther (headers exceeded)", path, err)
		}
		t.Logf("%s: %d bytes allocated, %v", path, b, err)
		if b > 16<<20 {
			t.Errorf("%s allocated %d bytes, want ≤ 16 MiB", path, b)
		}
	}
	// A few informational responses are skipped.
	if r, err := fetchWithin(t, f, s.URL+"/informational?n=3", 30*time.Second); err != nil || r.Status != 200 {
		t.Fatalf("3 informational responses: err %v", err)
	}
}

// TestHostilePrivateTargets follows a redirect chain from a (stand-in
// public) page to the server's own loopback address in every notation: the
// guarded fetcher refuses each with ErrPrivateAddress before connecting and
// without a DNS query, while an unguarded one reaches the server through
// the same URL (so the notation really names it).
func TestHostilePrivateTargets(t *testing.T) {
	s := startHostile(t)
	res := hostile.NewResolver()
	open := newTest(t, func(o *Options) { o.Resolver = res.Lookup; o.DialTimeout = 2 * time.Second })
	guarded, err := New(Options{Resolver: res.Lookup, TempDir: t.TempDir(), DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer guarded.Close()
	for _, tg := range s.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			r, err := fetchWithin(t, open, s.URL+"/redirect?to="+url.QueryEscape(tg.URL), 30*time.Second)
			if err != nil || r.Status != 302 || r.Location == "" {
				t.Fatalf("redirect: %v", err)
			}
			hits := s.Hits("/target")
			_, err = fetchWithin(t, guarded, r.Location, 30*time.Second)
			if !errors.Is(err, ErrPrivateAddress) || IsRetryable(err) {
				t.Errorf("guarded fetch of %s: err %v, want non-retryable ErrPrivateAddress", r.Location, err)
			}
			if s.Hits("/target") != hits {
				t.Fatalf("guarded fetch of %s reached the server", r.Location)
			}
			if !tg.Reachable {
				return
			}
			loc := r.Location
			r, err = fetchWithin(t, open, loc, 30*time.Second)
			if err != nil || r.Status != 200 || readAll(t, r.Body) != hostile.TargetBody || s.Hits("/target") != hits+1 {
				t.Errorf("unguarded fetch of %s: err %v (the notation does not name the server)", loc, err)
			}
		})
	}
	for len(res.Unexpected) > 0 {
		t.Errorf("a notation of an address was looked up in DNS: %q", <-res.Unexpected)
	}
	if st := guarded.Stats(); st.ErrPrivate != int64(len(s.Targets())) {
		t.Errorf("stats: %d private refusals, want %d", st.ErrPrivate, len(s.Targets()))
	}
}

// A host whose robots.txt lives at a refused address is reported as such,
// not retried as if it were down.
func TestHostileRobotsPrivate(t *testing.T) {
	s := startHostile(t)
	res := hostile.NewResolver()
	f, err := New(Options{Resolver: res.Lookup, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules, fetched, _, err := f.Robots(context.Background(), "http", fmt.Sprintf("%s:%d", hostile.LoopbackName, s.Port))
	if err != nil || !fetched {
		t.Fatalf("err %v fetched %v", err, fetched)
	}
	if rules.Outcome != RobotsUnreachable || !errors.Is(rules.Err, ErrPrivateAddress) || rules.Retry || rules.Allowed("/") {
		t.Fatalf("rules %+v, want unreachable (private, no retry), nothing allowed", rules)
	}
	if a, ok := RefusedAddr(rules.Err); !ok || a.String() != "127.0.0.1" {
		t.Fatalf("RefusedAddr(%v) = %v, %v; want 127.0.0.1", rules.Err, a, ok)
	}
	if s.Hits("/robots.txt") != 0 {
		t.Fatal("robots.txt was fetched from a private address")
	}
}

// A host that reads as an IPv4 number but is none is a bad URL, for a page
// and for robots.txt, and is never looked up.
func TestNumericHostInvalid(t *testing.T) {
	res := hostile.NewResolver()
	f := newTest(t, func(o *Options) { o.Resolver = res.Lookup })
	for _, u := range []string{"http://256.0.0.1/", "http://0x7g.1/", "http://1.2.3.4.5/", "http://08.0.0.1/"} {
		if _, err := f.Fetch(context.Background(), u); !errors.Is(err, ErrBadURL) || IsRetryable(err) {
			t.Errorf("%s: err %v, want ErrBadURL", u, err)
		}
	}
	rules, _, _, err := f.Robots(context.Background(), "http", "4294967296")
	if err != nil || rules.Outcome != RobotsUnreachable || !errors.Is(rules.Err, ErrBadURL) {
		t.Errorf("robots of 4294967296: %+v, %v", rules, err)
	}
	if len(res.Unexpected) > 0 {
		t.Errorf("looked up %q", <-res.Unexpected)
	}
}

// fakeRemote makes a loopback connection look like one to a public address.
type fakeRemote struct{ net.Conn }

func (fakeRemote) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 80}
}

// A robots.txt redirect chain from a public host into the private range,
// in every notation, is refused by the guard (here the DialContext
// override's: it judges the address of the connection made), and the
// rules say so.
func TestHostileRobotsRedirectPrivate(t *testing.T) {
	s := startHostile(t)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", s.Listener())
		if err != nil || !strings.HasPrefix(addr, "public.test:") {
			return c, err
		}
		return fakeRemote{c}, nil
	}
	for _, tg := range s.Targets() {
		if !tg.Reachable {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			f := newTest(t, func(o *Options) {
				o.AllowPrivate, o.DialContext, o.RobotsCrossHostRedirects = false, dial, true
			})
			s.RobotsTarget.Store(&tg.URL)
			hits := s.Hits("/target")
			rules, _, _, err := f.Robots(context.Background(), "http", "public.test")
			if err != nil || rules.Outcome != RobotsUnreachable || !errors.Is(rules.Err, ErrPrivateAddress) || rules.Retry || rules.Redirect == "" {
				t.Fatalf("rules %+v, err %v; want unreachable (private address refused) after a redirect", rules, err)
			}
			if s.Hits("/target") != hits {
				t.Fatal("the redirect target was fetched")
			}
		})
	}
	if s.Hits("/robots.txt") == 0 {
		t.Fatal("the public robots.txt was never fetched")
	}
}
