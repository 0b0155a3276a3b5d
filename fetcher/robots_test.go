package fetcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock for caches.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// robotsWeb serves virtual hosts under sim.test from one loopback server:
// handler(host, path) writes the response; hits counts requests per host.
type robotsWeb struct {
	f     *Fetcher
	clock *fakeClock
	hits  sync.Map // host → *atomic.Int32
}

func newRobotsWeb(t testing.TB, h func(w http.ResponseWriter, r *http.Request), mod func(*Options)) *robotsWeb {
	rw := &robotsWeb{clock: &fakeClock{now: time.Unix(1.7e9, 0)}}
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		c, _ := rw.hits.LoadOrStore(r.Host, new(atomic.Int32))
		c.(*atomic.Int32).Add(1)
		h(w, r)
	})
	rw.f = newTest(t, func(o *Options) {
		o.Resolve = map[string]string{"sim.test": s.Listener.Addr().String()}
		o.Now = rw.clock.Now
		if mod != nil {
			mod(o)
		}
	})
	return rw
}

func (rw *robotsWeb) count(host string) int {
	c, ok := rw.hits.Load(host)
	if !ok {
		return 0
	}
	return int(c.(*atomic.Int32).Load())
}

func (rw *robotsWeb) robots(t *testing.T, host string) (*RobotsRules, bool) {
	t.Helper()
	r, fetched, _, err := rw.f.Robots(context.Background(), "http", host)
	if err != nil {
		t.Fatal(err)
	}
	return r, fetched
}

const sampleRobots = `User-agent: *
Disallow: /
User-agent: Sextant
Crawl-delay: 2.5
Disallow: /private
Allow: /private/ok
Sitemap: http://a.sim.test/sitemap.xml
`

func TestRobotsParsedAndCached(t *testing.T) {
	rw := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			t.Errorf("unexpected request %s", r.URL)
		}
		fmt.Fprint(w, sampleRobots)
	}, nil)
	r, fetched, dur, err := rw.f.Robots(context.Background(), "HTTP", "A.sim.test")
	if err != nil || !fetched || dur <= 0 || r.Outcome != RobotsParsed || r.Status != 200 {
		t.Fatalf("first: %+v fetched %v dur %v err %v", r, fetched, dur, err)
	}
	for u, want := range map[string]bool{
		"http://a.sim.test/":                true,
		"http://a.sim.test/private":         false,
		"http://a.sim.test/private/x?y":     false,
		"http://a.sim.test/private/ok/page": true,
		"/privatex":                         false,
		"http://a.sim.test/public#/private": true,
		"http://a.sim.test/?q=/private":     true,
		"http://a.sim.test/robots.txt":      true,
	} {
		if got := r.Allowed(u); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", u, got, want)
		}
	}
	if r.CrawlDelay() != 2500*time.Millisecond || len(r.Sitemaps) != 1 {
		t.Fatalf("crawl-delay %v sitemaps %v", r.CrawlDelay(), r.Sitemaps)
	}
	r2, fetched := rw.robots(t, "a.sim.test")
	if fetched || r2 != r || rw.count("a.sim.test") != 1 || rw.f.CachedRobots("http", "a.sim.test") != r {
		t.Fatalf("second call fetched=%v, server hits %d", fetched, rw.count("a.sim.test"))
	}
	if rw.f.CachedRobots("http", "a.sim.test:80") != r {
		t.Fatal("default port not folded into the origin")
	}
	// https is a different origin.
	if rw.f.CachedRobots("https", "a.sim.test") != nil {
		t.Fatal("https shares http's cache entry")
	}
	rw.clock.Advance(24*time.Hour + time.Second)
	if rw.f.CachedRobots("http", "a.sim.test") != nil {
		t.Fatal("entry outlived 24 h")
	}
	if _, fetched := rw.robots(t, "a.sim.test"); !fetched || rw.count("a.sim.test") != 2 {
		t.Fatalf("after 24 h: fetched %v hits %d", fetched, rw.count("a.sim.test"))
	}
	st := rw.f.Stats()
	if st.RobotsFetches != 2 || st.RobotsCacheHits != 1 || st.RobotsCacheMisses != 2 || st.RobotsRules != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRobotsStatusClasses(t *testing.T) {
	rw := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscanf(r.Host, "s%d.sim.test", &code)
		w.WriteHeader(code)
		fmt.Fprint(w, "User-agent: *\nDisallow: /\n") // must be ignored for non-2xx
	}, func(o *Options) { o.RobotsErrorTTL = time.Minute; o.RobotsAttempts = 1 })
	for code, want := range map[int]RobotsOutcome{
		200: RobotsParsed, 204: RobotsParsed, 400: RobotsAllowAll, 401: RobotsAllowAll,
		403: RobotsAllowAll, 404: RobotsAllowAll, 410: RobotsAllowAll, 429: RobotsAllowAll,
		500: RobotsUnreachable, 502: RobotsUnreachable, 503: RobotsUnreachable,
		304: RobotsAllowAll, // redirect class without a Location
	} {
		host := fmt.Sprintf("s%d.sim.test", code)
		r, _ := rw.robots(t, host)
		if r.Outcome != want || r.Status != code {
			t.Errorf("%d: outcome %v status %d, want %v", code, r.Outcome, r.Status, want)
			continue
		}
		wantAllowed := want == RobotsAllowAll || code == 204 // 204: empty file
		if got := r.Allowed("/page"); got != wantAllowed {
			t.Errorf("%d: Allowed = %v, want %v", code, got, wantAllowed)
		}
		wantTTL := 24 * time.Hour
		if want == RobotsUnreachable {
			wantTTL = time.Minute
		}
		if ttl := r.Expires.Sub(r.Fetched); ttl != wantTTL {
			t.Errorf("%d: cached for %v, want %v", code, ttl, wantTTL)
		}
	}
	// 5xx is retried after RobotsErrorTTL.
	rw.clock.Advance(time.Minute)
	if _, fetched := rw.robots(t, "s503.sim.test"); !fetched || rw.count("s503.sim.test") != 2 {
		t.Fatalf("5xx not retried after its TTL: fetched %v hits %d", fetched, rw.count("s503.sim.test"))
	}
}

func TestRobotsNetworkFailure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f := newTest(t, func(o *Options) { o.Resolve = map[string]string{"down.test": addr} })
	r, fetched, _, err := f.Robots(context.Background(), "http", "down.test")
	if err != nil || !fetched || r.Outcome != RobotsUnreachable || r.Allowed("/") || !errors.Is(r.Err, ErrConnect) {
		t.Fatalf("rules %+v fetched %v err %v", r, fetched, err)
	}
	// The private-address guard makes robots.txt unreachable too.
	g, _ := New(Options{TempDir: t.TempDir(), Resolve: map[string]string{"down.test": addr}})
	defer g.Close()
	r, _, _, err = g.Robots(context.Background(), "http", "down.test")
	if err != nil || r.Outcome != RobotsUnreachable || !errors.Is(r.Err, ErrPrivateAddress) {
		t.Fatalf("guarded: %+v err %v", r, err)
	}
	if _, _, _, err := f.Robots(context.Background(), "ftp", "x.test"); !errors.Is(err, ErrBadURL) {
		t.Fatalf("bad scheme: %v", err)
	}
}

func TestRobotsSizeCap(t *testing.T) {
	filler := strings.Repeat("# padding padding padding padding padding padding padding\n", 12_000) // ~700 KB
	rw := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /early\n"+filler+"Disallow: /late\n")
	}, nil)
	r, _ := rw.robots(t, "big.sim.test")
	if !r.Truncated || r.Allowed("/early") || !r.Allowed("/late") {
		t.Fatalf("truncated %v, /early allowed %v, /late allowed %v", r.Truncated, r.Allowed("/early"), r.Allowed("/late"))
	}
	// A rule cut at the cap is dropped, not parsed as a shorter prefix.
	head := "User-agent: *\n" + strings.Repeat("#", 1000) + "\n"
	line := "Disallow: /abcdefgh\n"
	rw2 := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, head+line) },
		func(o *Options) { o.RobotsMaxBytes = int64(len(head) + 12) }) // cut after "Disallow: /"
	r, _ = rw2.robots(t, "cut.sim.test")
	if !r.Truncated || !r.Allowed("/x") {
		t.Fatalf("cut rule applied: truncated %v, /x allowed %v", r.Truncated, r.Allowed("/x"))
	}
}

func TestRobotsLRUBound(t *testing.T) {
	rw := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "") },
		func(o *Options) { o.RobotsCacheSize = 2 })
	for _, h := range []string{"a.sim.test", "b.sim.test", "a.sim.test", "c.sim.test", "a.sim.test", "b.sim.test"} {
		rw.robots(t, h)
	}
	// a,b fetched; a hit; c evicts b; a hit; b refetched (evicts c).
	if rw.count("a.sim.test") != 1 || rw.count("b.sim.test") != 2 || rw.count("c.sim.test") != 1 {
		t.Fatalf("hits a %d b %d c %d", rw.count("a.sim.test"), rw.count("b.sim.test"), rw.count("c.sim.test"))
	}
	if st := rw.f.Stats(); st.RobotsEvictions != 2 || st.RobotsCacheHits != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRobotsUnreachableFallback(t *testing.T) {
	var down atomic.Bool
	rw := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) {
		if down.Load() || r.Host == "never.sim.test" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /private\nCrawl-delay: 7\n")
	}, func(o *Options) { o.RobotsErrorTTL = time.Hour })
	r, _ := rw.robots(t, "h.sim.test")
	if r.Outcome != RobotsParsed {
		t.Fatal(r.Outcome)
	}
	down.Store(true)
	rw.clock.Advance(25 * time.Hour)
	for day := 0; day < 29; day++ {
		r, _ = rw.robots(t, "h.sim.test")
		if r.Outcome != RobotsUnreachable || r.Allowed("/public") {
			t.Fatalf("day %d of outage: %v", day, r.Outcome)
		}
		rw.clock.Advance(24 * time.Hour)
	}
	rw.clock.Advance(2 * 24 * time.Hour)
	r, _ = rw.robots(t, "h.sim.test")
	if r.Outcome != RobotsStaleFallback || !r.Allowed("/public") || r.Allowed("/private") || r.CrawlDelay() != 7*time.Second {
		t.Fatalf("after 30 days: %v, last good copy not used", r.Outcome)
	}
	// No good copy ever: allow all after 30 days.
	r, _ = rw.robots(t, "never.sim.test")
	if r.Outcome != RobotsUnreachable {
		t.Fatal(r.Outcome)
	}
	rw.clock.Advance(31 * 24 * time.Hour)
	r, _ = rw.robots(t, "never.sim.test")
	if r.Outcome != RobotsStaleFallback || !r.Allowed("/private") {
		t.Fatalf("no good copy: %v allowed %v", r.Outcome, r.Allowed("/private"))
	}
	// Recovery resets the outage.
	down.Store(false)
	rw.clock.Advance(2 * time.Hour)
	if r, _ = rw.robots(t, "h.sim.test"); r.Outcome != RobotsParsed {
		t.Fatalf("after recovery: %v", r.Outcome)
	}
}

func TestRobotsConcurrentSingleFetch(t *testing.T) {
	release := make(chan struct{})
	rw := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		fmt.Fprint(w, "User-agent: *\nDisallow: /x\n")
	}, nil)
	var wg sync.WaitGroup
	var fetchedN atomic.Int32
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, fetched, _, err := rw.f.Robots(context.Background(), "http", "one.sim.test")
			if err != nil || r.Allowed("/x") {
				t.Errorf("err %v", err)
			}
			if fetched {
				fetchedN.Add(1)
			}
		}()
	}
	time.AfterFunc(50*time.Millisecond, func() { close(release) })
	wg.Wait()
	if fetchedN.Load() != 1 || rw.count("one.sim.test") != 1 {
		t.Fatalf("%d callers fetched, server saw %d requests", fetchedN.Load(), rw.count("one.sim.test"))
	}
}

func TestRobotsCancelNotCached(t *testing.T) {
	release := blocker(t)
	rw := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	if _, _, _, err := rw.f.Robots(ctx, "http", "slow.sim.test"); !errors.Is(err, context.Canceled) && !errors.Is(err, ErrCanceled) {
		t.Fatalf("err %v", err)
	}
	if rw.f.CachedRobots("http", "slow.sim.test") != nil {
		t.Fatal("cancelled fetch was cached")
	}
}

// A failing robots.txt is fetched again at each call (Retry set, nothing
// cached) until it has failed RobotsAttempts times in a row; only then is
// "disallow all" cached for RobotsErrorTTL. A success in between resets
// the count: a host that was down while the crawler started is not lost.
func TestRobotsRetryBeforeDisallow(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	rw := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
	}, func(o *Options) { o.RobotsErrorTTL = time.Hour; o.RobotsAttempts = 3; o.RobotsRetryDelay = time.Second })
	for i := 1; i <= 2; i++ {
		r, fetched := rw.robots(t, "h.sim.test")
		if !fetched || r.Outcome != RobotsUnreachable || !r.Retry || r.Allowed("/x") {
			t.Fatalf("failure %d: fetched %v outcome %v retry %v", i, fetched, r.Outcome, r.Retry)
		}
		// Held until the retry delay (1 s, then 2 s) has passed.
		wait := time.Second << (i - 1)
		rw.clock.Advance(wait - time.Millisecond)
		if r, fetched := rw.robots(t, "h.sim.test"); fetched || !r.Retry {
			t.Fatalf("failure %d: refetched before its retry delay %v", i, wait)
		}
		rw.clock.Advance(time.Millisecond)
	}
	if rw.count("h.sim.test") != 2 {
		t.Fatalf("%d fetches after two failures, want 2", rw.count("h.sim.test"))
	}
	fail.Store(false)
	if r, _ := rw.robots(t, "h.sim.test"); r.Outcome != RobotsParsed || r.Retry || !r.Allowed("/x") {
		t.Fatalf("after recovery: %v retry %v", r.Outcome, r.Retry)
	}
	// The count restarts: three more failures (after the good copy expires)
	// before the disallow is cached.
	fail.Store(true)
	rw.clock.Advance(25 * time.Hour)
	for i := 1; i <= 3; i++ {
		r, fetched := rw.robots(t, "h.sim.test")
		if !fetched || r.Outcome != RobotsUnreachable || r.Retry != (i < 3) {
			t.Fatalf("failure %d after recovery: fetched %v outcome %v retry %v", i, fetched, r.Outcome, r.Retry)
		}
		rw.clock.Advance(time.Second << (i - 1))
	}
	if r, fetched := rw.robots(t, "h.sim.test"); fetched || r.Retry || r.Allowed("/x") {
		t.Fatalf("after %d failures the disallow must be cached: fetched %v retry %v", 3, fetched, r.Retry)
	}
}
