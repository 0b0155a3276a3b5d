package fetcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

func persistHandler(w http.ResponseWriter, r *http.Request) {
	switch r.Host {
	case "p.sim.test":
		w.Write([]byte(sampleRobots))
	case "d.sim.test":
		http.Error(w, "down", http.StatusServiceUnavailable)
	default:
		http.NotFound(w, r)
	}
}

// Issue 25, defect 7: the robots cache survives a restart — rules saved
// with their expiry are used without a request until they expire; an
// outage is not saved (tried again), rules for another token are not
// used, and a damaged line costs only that host's refetch.
func TestRobotsCacheSaveLoad(t *testing.T) {
	rw := newRobotsWeb(t, persistHandler, nil)
	for _, h := range []string{"p.sim.test", "n.sim.test", "d.sim.test"} {
		rw.robots(t, h)
	}
	var buf bytes.Buffer
	n, err := rw.f.SaveRobots(&buf)
	if err != nil || n != 2 {
		t.Fatalf("saved %d entries (%v), want 2: the parsed and the 404 host, not the outage", n, err)
	}
	saved := buf.String()
	want, _ := rw.robots(t, "p.sim.test")

	// A restarted fetcher, an hour later.
	rw2 := newRobotsWeb(t, persistHandler, nil)
	rw2.clock.Advance(time.Hour)
	loaded, bad, err := rw2.f.LoadRobots(strings.NewReader(saved))
	if err != nil || loaded != 2 || bad != 0 {
		t.Fatalf("loaded %d, bad %d, %v", loaded, bad, err)
	}
	got, fetched := rw2.robots(t, "p.sim.test")
	if fetched || got.Outcome != RobotsParsed || got.CrawlDelay() != want.CrawlDelay() || !got.Expires.Equal(want.Expires) ||
		got.Allowed("/x") != want.Allowed("/x") || got.Allowed("/private/a") != want.Allowed("/private/a") ||
		strings.Join(got.Sitemaps, ",") != strings.Join(want.Sitemaps, ",") || len(want.Sitemaps) != 1 {
		t.Fatalf("restored rules: fetched %v %+v, want %+v", fetched, got, want)
	}
	if r, fetched := rw2.robots(t, "n.sim.test"); fetched || r.Outcome != RobotsAllowAll {
		t.Fatalf("restored 404: fetched %v %v", fetched, r.Outcome)
	}
	if _, fetched := rw2.robots(t, "d.sim.test"); !fetched {
		t.Fatal("an outage was restored instead of tried again")
	}
	if rw2.count("p.sim.test")+rw2.count("n.sim.test") != 0 {
		t.Fatalf("restored hosts asked again: %d %d", rw2.count("p.sim.test"), rw2.count("n.sim.test"))
	}
	// Past their expiry (24 h) the rules are fetched again.
	rw2.clock.Advance(24 * time.Hour)
	if _, fetched := rw2.robots(t, "p.sim.test"); !fetched {
		t.Fatal("expired restored rules used")
	}

	// Expired when loaded: skipped.
	rw3 := newRobotsWeb(t, persistHandler, nil)
	rw3.clock.Advance(25 * time.Hour)
	if loaded, _, err := rw3.f.LoadRobots(strings.NewReader(saved)); err != nil || loaded != 0 {
		t.Fatalf("expired entries loaded: %d, %v", loaded, err)
	}
	// Another robots token: its groups differ, nothing is used.
	rw4 := newRobotsWeb(t, persistHandler, func(o *Options) { o.RobotsToken = "otherbot" })
	if loaded, _, err := rw4.f.LoadRobots(strings.NewReader(saved)); err != nil || loaded != 0 {
		t.Fatalf("another token's rules loaded: %d, %v", loaded, err)
	}
	// A damaged line is skipped and counted; a foreign stream is refused.
	lines := strings.SplitAfter(saved, "\n")
	lines[1] = `{"k": 12, broken` + "\n"
	rw5 := newRobotsWeb(t, persistHandler, nil)
	if loaded, bad, err := rw5.f.LoadRobots(strings.NewReader(strings.Join(lines, ""))); err != nil || loaded != 1 || bad != 1 {
		t.Fatalf("damaged line: loaded %d bad %d %v", loaded, bad, err)
	}
	for _, in := range []string{"", "not json\n", `{"format":"other/9"}` + "\n"} {
		if _, _, err := rw5.f.LoadRobots(strings.NewReader(in)); !errors.Is(err, ErrRobotsFormat) {
			t.Errorf("LoadRobots(%q): %v, want ErrRobotsFormat", in, err)
		}
	}
}

func FuzzLoadRobots(f *testing.F) {
	rw := newRobotsWeb(f, persistHandler, nil)
	rw.f.Robots(f.Context(), "http", "p.sim.test")
	var buf bytes.Buffer
	rw.f.SaveRobots(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"sextant-robots-cache/1","token":"sextant"}` + "\n" + `{"k":"http://a","o":0,"r":[{"p":"/x","l":-5}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ft := newRobotsWeb(t, persistHandler, nil)
		ft.f.LoadRobots(bytes.NewReader(b))
		if r := ft.f.CachedRobots("http", "a"); r != nil {
			r.Allowed("/x/y") // restored rules must be usable, whatever they say
		}
	})
}

// heapWriter discards what is written and, at the first write (SaveRobots
// has taken its snapshot of the cache by then), records the live heap.
type heapWriter struct{ live uint64 }

func (w *heapWriter) Write(p []byte) (int, error) {
	if w.live == 0 {
		w.live = liveHeap()
	}
	return len(p), nil
}

func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Issue 29: SaveRobots runs every 10 s on the whole cache. It copied every
// entry into a record first, so a 10⁵-host crawl held ≈ 50 MB more live
// heap during each save. It now holds one reference per entry (24 bytes)
// and encodes one record at a time; the round trip is unchanged.
func TestSaveRobotsHoldsNoCopyOfTheCache(t *testing.T) {
	const n = 40_000
	rw := newRobotsWeb(t, persistHandler, nil)
	now := rw.clock.Now()
	for i := range n {
		r := &RobotsRules{Outcome: RobotsParsed, Status: 200, Fetched: now, Expires: now.Add(time.Hour),
			Sitemaps: []string{"http://s.sim.test/sitemap.xml"},
			rules:    agentRules{rules: []robotsRule{newRobotsRule("/private/", false)}, crawlDelay: -1}}
		rw.f.robots.restore(fmt.Sprintf("http://h%05d.sim.test", i), r)
	}
	before := liveHeap()
	w := &heapWriter{}
	if saved, err := rw.f.SaveRobots(w); err != nil || saved != n {
		t.Fatalf("saved %d (%v), want %d", saved, err, n)
	}
	if grew := int64(w.live) - int64(before); grew > n*64 {
		t.Errorf("live heap grew %d bytes (%d per entry) during the save, want ≤ 64 per entry", grew, grew/n)
	}
	var buf bytes.Buffer
	if _, err := rw.f.SaveRobots(&buf); err != nil {
		t.Fatal(err)
	}
	rw2 := newRobotsWeb(t, persistHandler, nil)
	if loaded, bad, err := rw2.f.LoadRobots(&buf); err != nil || loaded != n || bad != 0 {
		t.Fatalf("loaded %d, bad %d, %v; want %d", loaded, bad, err, n)
	}
	r := rw2.f.CachedRobots("http", "h00007.sim.test")
	if r == nil || r.Allowed("/private/x") || !r.Allowed("/x") || len(r.Sitemaps) != 1 {
		t.Fatalf("restored rules %+v", r)
	}
}

// Issue 29: the robots cache keeps one entry per host seen (up to
// RobotsCacheSize, 10⁵), so its bytes per entry are a 10⁵-host crawl's
// RSS per host, twice over with the GC's heap goal. The LRU list ran
// through a container/list element beside each entry and every entry
// carried a deferred redirect's state: 386 bytes per simweb host besides
// its key (Go 1.26). Now 322; the bound is that budget.
func TestRobotsCacheBytesPerHost(t *testing.T) {
	const n = 50_000
	rw := newRobotsWeb(t, persistHandler, nil)
	body := []byte("User-agent: otherbot\nDisallow: /\n\nUser-agent: *\nAllow: /\n") // simweb's
	now := rw.clock.Now()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = robotsKey("http", fmt.Sprintf("h%05d.sim.test", i))
	}
	before := liveHeap()
	for _, key := range keys {
		rf := parseRobots(body)
		r := &RobotsRules{Outcome: RobotsParsed, Status: 200, Sitemaps: rf.sitemaps, rules: rf.forAgent(rw.f.opts.RobotsToken)}
		rw.f.robots.lookup(key, now)
		rw.f.robots.store(key, r, now, &rw.f.opts, &rw.f.stats)
	}
	per := int64(liveHeap()-before) / n
	if per > 352 {
		t.Errorf("robots cache holds %d bytes per host, want ≤ 352", per)
	}
	if r := rw.f.CachedRobots("http", "h00007.sim.test"); r == nil || !r.Allowed("/x") {
		t.Fatalf("cached rules %+v", r)
	}
}

// BenchmarkSaveRobots saves a cache of 10⁴ simweb entries (a node saves
// its cache every 10 s: at 10⁵ hosts, ten of these per save).
func BenchmarkSaveRobots(b *testing.B) {
	rw := newRobotsWeb(b, persistHandler, nil)
	now := rw.clock.Now()
	body := []byte("User-agent: otherbot\nDisallow: /\n\nUser-agent: *\nAllow: /\n")
	for i := range 10_000 {
		rf := parseRobots(body)
		r := &RobotsRules{Outcome: RobotsParsed, Status: 200, Fetched: now, Expires: now.Add(time.Hour),
			Sitemaps: rf.sitemaps, rules: rf.forAgent(rw.f.opts.RobotsToken)}
		rw.f.robots.restore(robotsKey("http", fmt.Sprintf("h%05d.sim.test", i)), r)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rw.f.SaveRobots(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
