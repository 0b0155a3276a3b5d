package fetcher

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

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
