package fetcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
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

// robotsRedirectHandler: rN.sim.test redirects to r(N-1) (another host),
// r1 to final.sim.test; loop.sim.test loops on itself; sN.sim.test
// redirects N times on its own host (/robots/N-1.txt), then serves rules.
func robotsRedirectHandler(t *testing.T) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		var n int
		switch {
		case strings.HasPrefix(r.Host, "s"):
			if _, err := fmt.Sscanf(r.URL.Path, "/robots/%d.txt", &n); err != nil {
				fmt.Sscanf(r.Host, "s%d.sim.test", &n)
			}
			if n == 0 {
				fmt.Fprint(w, "User-agent: sextant\nDisallow: /secret\n")
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/robots/%d.txt", n-1), http.StatusFound)
			return
		case r.Host == "loop.sim.test":
			http.Redirect(w, r, "/robots.txt", http.StatusFound)
		case r.Host == "final.sim.test":
			fmt.Fprint(w, "User-agent: sextant\nDisallow: /secret\n")
		default:
			if _, err := fmt.Sscanf(r.Host, "r%d.sim.test", &n); err != nil {
				t.Errorf("host %q", r.Host)
			}
			target := "http://final.sim.test/robots.txt"
			if n > 1 {
				target = fmt.Sprintf("http://r%d.sim.test/robots.txt", n-1)
			}
			http.Redirect(w, r, target, http.StatusMovedPermanently)
		}
	}
}

// TestRobotsRedirectOtherHostRefused: by default a hop to another host is
// not followed (it would bypass that host's politeness slot): robots.txt
// is then unavailable (allow all) and the refused target is reported; hops
// on the host itself are followed up to the limit.
func TestRobotsRedirectOtherHostRefused(t *testing.T) {
	rw := newRobotsWeb(t, robotsRedirectHandler(t), nil)
	r, fetched := rw.robots(t, "r2.sim.test")
	if !fetched || r.Outcome != RobotsAllowAll || r.RefusedRedirect != "http://r1.sim.test/robots.txt" || !r.Allowed("/secret") {
		t.Fatalf("cross-host hop: %+v", r)
	}
	if rw.count("r2.sim.test") != 1 || rw.count("r1.sim.test") != 0 || rw.count("final.sim.test") != 0 {
		t.Fatalf("requests r2 %d r1 %d final %d: the other host was contacted", rw.count("r2.sim.test"), rw.count("r1.sim.test"), rw.count("final.sim.test"))
	}
	if st := rw.f.Stats(); st.RobotsRefusedHops != 1 {
		t.Fatalf("refused hops %d", st.RobotsRefusedHops)
	}
	for n := 1; n <= 6; n++ {
		host := fmt.Sprintf("s%d.sim.test", n)
		r, _ := rw.robots(t, host)
		if r.RefusedRedirect != "" {
			t.Fatalf("%s: same-host hop refused", host)
		}
		if n <= 5 {
			if r.Outcome != RobotsParsed || r.Allowed("/secret") {
				t.Errorf("%d same-host redirects: %v", n, r.Outcome)
			}
		} else if r.Outcome != RobotsAllowAll {
			t.Errorf("%d same-host redirects: %v, want allow-all", n, r.Outcome)
		}
		if want := min(n, 5) + 1; rw.count(host) != want {
			t.Errorf("%s: %d requests, want %d", host, rw.count(host), want)
		}
	}
}

func TestRobotsRedirects(t *testing.T) {
	rw := newRobotsWeb(t, robotsRedirectHandler(t), func(o *Options) { o.RobotsCrossHostRedirects = true })
	for n := 1; n <= 6; n++ {
		host := fmt.Sprintf("r%d.sim.test", n)
		r, _ := rw.robots(t, host)
		if n <= 5 { // n redirects: followed
			if r.Outcome != RobotsParsed || r.Allowed("/secret") || !r.Allowed("/open") {
				t.Errorf("%d redirects: %v, /secret allowed %v", n, r.Outcome, r.Allowed("/secret"))
			}
		} else if r.Outcome != RobotsAllowAll || !r.Allowed("/secret") {
			t.Errorf("%d redirects: outcome %v, want allow-all (as 404)", n, r.Outcome)
		}
	}
	r, _ := rw.robots(t, "loop.sim.test")
	if r.Outcome != RobotsAllowAll || rw.count("loop.sim.test") != 6 {
		t.Fatalf("loop: outcome %v after %d requests, want allow-all after 6", r.Outcome, rw.count("loop.sim.test"))
	}
	// Requests per origin: r1:2 r2:3 r3:4 r4:5 r5:6, r6:6 (cut), loop:6.
	if st := rw.f.Stats(); st.RobotsFetches != 32 || st.RobotsCacheMisses != 7 {
		t.Fatalf("robots fetches %d misses %d, want 32 and 7", st.RobotsFetches, st.RobotsCacheMisses)
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

// fakeGate is a HostGate that refuses the hosts in busy (until retry) and
// records what it granted and released.
type fakeGate struct {
	mu       sync.Mutex
	busy     map[string]bool
	retry    time.Time
	err      error
	granted  []string // holding→target host
	released []bool   // failed flags, in order
	open     int      // granted and not released
}

func (g *fakeGate) Acquire(holding, target string) (func(time.Duration, bool), time.Time, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	u, err := url.Parse(target)
	if err != nil {
		return nil, time.Time{}, false, err
	}
	if g.err != nil {
		return nil, time.Time{}, false, g.err
	}
	if g.busy[u.Host] {
		return nil, g.retry, false, nil
	}
	g.granted = append(g.granted, holding+"→"+u.Host)
	g.open++
	once := false
	return func(d time.Duration, failed bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if once {
			panic("released twice")
		}
		once = true
		g.open--
		g.released = append(g.released, failed)
	}, time.Time{}, true, nil
}

// TestRobotsRedirectOtherHostGated: with a RobotsHostGate, a redirect to
// another host is followed in that host's slot (RFC 9309 §2.3.1.2); while
// the gate refuses, the rules are RobotsDeferred (nothing allowed, Retry
// until the gate's retry time) and the next call resumes at the hop
// without asking the first host again.
func TestRobotsRedirectOtherHostGated(t *testing.T) {
	g := &fakeGate{busy: map[string]bool{"r1.sim.test": true}}
	rw := newRobotsWeb(t, robotsRedirectHandler(t), func(o *Options) { o.RobotsHostGate = g })
	g.retry = rw.clock.Now().Add(3 * time.Second)

	// r2 → r1 (busy): deferred after one request to r2.
	r, fetched := rw.robots(t, "r2.sim.test")
	if !fetched || r.Outcome != RobotsDeferred || !r.Retry || r.Allowed("/open") || !r.Expires.Equal(g.retry) ||
		r.Redirect != "http://r1.sim.test/robots.txt" {
		t.Fatalf("busy hop: %+v", r)
	}
	if rw.count("r2.sim.test") != 1 || rw.count("r1.sim.test") != 0 {
		t.Fatalf("requests r2 %d r1 %d", rw.count("r2.sim.test"), rw.count("r1.sim.test"))
	}
	// Cached until the retry time: no request, no gate call.
	rw.clock.Advance(time.Second)
	if r2, fetched := rw.robots(t, "r2.sim.test"); fetched || r2 != r {
		t.Fatalf("before retry: fetched %v, %+v", fetched, r2)
	}
	// r1 is free now: resumed at the hop, r2 not asked again; r1 → final
	// is another host again, granted too.
	g.mu.Lock()
	g.busy = nil
	g.mu.Unlock()
	rw.clock.Advance(3 * time.Second)
	r, fetched = rw.robots(t, "r2.sim.test")
	if !fetched || r.Outcome != RobotsParsed || r.Allowed("/secret") || !r.Allowed("/open") || r.Redirect != "http://r1.sim.test/robots.txt" {
		t.Fatalf("resumed: %+v", r)
	}
	if rw.count("r2.sim.test") != 1 || rw.count("r1.sim.test") != 1 || rw.count("final.sim.test") != 1 {
		t.Fatalf("requests r2 %d r1 %d final %d, want 1 each", rw.count("r2.sim.test"), rw.count("r1.sim.test"), rw.count("final.sim.test"))
	}
	want := []string{"r2.sim.test→r1.sim.test", "r2.sim.test→final.sim.test"}
	if fmt.Sprint(g.granted) != fmt.Sprint(want) || g.open != 0 || fmt.Sprint(g.released) != "[false false]" {
		t.Fatalf("gate: granted %v, %d not released, released %v", g.granted, g.open, g.released)
	}
	if st := rw.f.Stats(); st.RobotsDeferred != 1 || st.RobotsCrossHops != 2 || st.RobotsRefusedHops != 0 {
		t.Fatalf("stats: deferred %d cross %d refused %d", st.RobotsDeferred, st.RobotsCrossHops, st.RobotsRefusedHops)
	}
	// The 5-redirect limit counts hops across deferrals: r6 → … → final
	// is 6 hops, cut (allow all) whatever the gate does.
	r, _ = rw.robots(t, "r6.sim.test")
	if r.Outcome != RobotsAllowAll || rw.count("final.sim.test") != 1 {
		t.Fatalf("6 hops: %v, final asked %d times", r.Outcome, rw.count("final.sim.test")-1)
	}
	// A failed hop is released as failed and makes robots.txt unreachable.
	// A gate that cannot be used is an error and caches nothing.
	g.mu.Lock()
	g.err = errors.New("frontier closed")
	g.mu.Unlock()
	if _, _, _, err := rw.f.Robots(context.Background(), "http", "r3.sim.test"); err == nil || !strings.Contains(err.Error(), "frontier closed") {
		t.Fatalf("gate error: %v", err)
	}
	if rw.f.CachedRobots("http", "r3.sim.test") != nil {
		t.Fatal("rules cached after a gate error")
	}
}

// TestRobotsRedirectOtherHostFails: the other host answers 503 — the hop's
// slot is released as failed and robots.txt is unreachable (disallow,
// retry), as if the first host had failed.
func TestRobotsRedirectOtherHostFails(t *testing.T) {
	g := &fakeGate{}
	rw := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "a.sim.test" {
			http.Redirect(w, r, "http://b.sim.test/robots.txt", http.StatusFound)
			return
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	}, func(o *Options) { o.RobotsHostGate = g })
	r, _ := rw.robots(t, "a.sim.test")
	if r.Outcome != RobotsUnreachable || !r.Retry || r.Redirect != "http://b.sim.test/robots.txt" {
		t.Fatalf("%+v", r)
	}
	if fmt.Sprint(g.released) != "[true]" {
		t.Fatalf("released %v, want [true]", g.released)
	}
}

// Issue 25, defect 6: with a RobotsHostGate (a crawler keeping politeness
// state), a robots.txt redirect chain on the host itself goes one hop per
// call — each hop in the host's next slot, after its delay — instead of
// back to back; the chain's result and the redirect limit are unchanged.
func TestRobotsSameHostChainOneHopPerSlot(t *testing.T) {
	g := &fakeGate{}
	rw := newRobotsWeb(t, robotsRedirectHandler(t), func(o *Options) { o.RobotsHostGate = g })
	// s3: robots.txt → /robots/2.txt → /robots/1.txt → /robots/0.txt.
	for call := 1; call <= 3; call++ {
		r, fetched := rw.robots(t, "s3.sim.test")
		if !fetched || r.Outcome != RobotsDeferred || !r.Retry || r.Allowed("/open") {
			t.Fatalf("call %d: fetched %v %+v", call, fetched, r)
		}
		if n := rw.count("s3.sim.test"); n != call {
			t.Fatalf("call %d: %d requests to the host, want %d (one hop per call)", call, n, call)
		}
		rw.clock.Advance(10 * time.Millisecond)
	}
	r, fetched := rw.robots(t, "s3.sim.test")
	if !fetched || r.Outcome != RobotsParsed || r.Allowed("/secret") || !r.Allowed("/open") || rw.count("s3.sim.test") != 4 {
		t.Fatalf("last hop: fetched %v %+v, %d requests", fetched, r, rw.count("s3.sim.test"))
	}
	if len(g.granted) != 0 {
		t.Fatalf("gate asked for the host's own hops: %v", g.granted)
	}
	// The limit of 5 redirects still counts hops across the calls.
	for i := 0; i < 6; i++ {
		if r, _ = rw.robots(t, "s6.sim.test"); r.Outcome != RobotsDeferred {
			break
		}
		rw.clock.Advance(10 * time.Millisecond)
	}
	if r.Outcome != RobotsAllowAll || rw.count("s6.sim.test") != 6 {
		t.Fatalf("6 same-host hops: %v after %d requests, want allow-all after 6", r.Outcome, rw.count("s6.sim.test"))
	}
}
