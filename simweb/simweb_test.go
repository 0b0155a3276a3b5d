package simweb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/temoto/robotstxt"
	"go.uber.org/goleak"
)

func newWeb(t testing.TB, c Config) *Web {
	t.Helper()
	w, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func startServer(t testing.TB, w *Web, o Options) *Server {
	t.Helper()
	s, err := Start(w, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// samplePaths returns a deterministic sample of request targets of w:
// articles, directories, resources, specials and some that do not exist.
func samplePaths(w *Web, n int) [][2]string {
	var out [][2]string
	r := rng{s: 99}
	for len(out) < n {
		h := int32(r.intn(len(w.hosts)))
		var t target
		switch r.intn(4) {
		case 0:
			t = target{host: h, kind: pkArticle, a: int64(r.intn(int(w.hosts[h].n) + 2))}
		case 1:
			t = target{host: h, kind: pkHome}
		case 2:
			t = target{host: h, kind: pkImg, a: int64(r.intn(3))}
		default:
			if c := specialCount(w.hosts[h].kind); c > 0 {
				t = w.special(h, r.intn(c))
			} else {
				t = target{host: h, kind: pkRobots}
			}
		}
		out = append(out, [2]string{w.HostName(int(h)), string(w.appendPath(nil, t))})
	}
	return out
}

func TestDeterminism(t *testing.T) {
	a, b := newWeb(t, SmallConfig()), newWeb(t, SmallConfig())
	c := SmallConfig()
	c.Seed++
	other := newWeb(t, c)
	differ := 0
	for _, hp := range samplePaths(a, 300) {
		ra, err1 := a.Respond(hp[0], hp[1])
		rb, err2 := b.Respond(hp[0], hp[1])
		ro, err3 := other.Respond(hp[0], hp[1])
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatal(err1, err2, err3)
		}
		if ra.Status != rb.Status || !bytes.Equal(ra.Body, rb.Body) || fmt.Sprint(ra.Header) != fmt.Sprint(rb.Header) {
			t.Fatalf("%s%s differs between two webs of one config", hp[0], hp[1])
		}
		if !bytes.Equal(ra.Body, ro.Body) {
			differ++
		}
	}
	if differ < 250 {
		t.Errorf("only %d of 300 responses differ under another seed", differ)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{DefaultConfig(), SmallConfig()} {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	bad := Config{Hosts: -1, LinksMedian: 50, LinksMean: 10}
	bad.EnsureDefaults()
	err := bad.Validate()
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Hosts") || !strings.Contains(err.Error(), "links") {
		t.Fatalf("want both problems reported, got %v", err)
	}
	if _, err := New(bad); err == nil {
		t.Fatal("New accepted a bad config")
	}
}

// The link shape of the demo web on a sample of its articles (figures from
// Broder et al.: median 23, mean 62.55, ≈30% repeats; Mercator: ≈80% local).
func TestLinkShape(t *testing.T) {
	w := newWeb(t, DefaultConfig())
	var urls []string
	r := rng{s: 5}
	for len(urls) < 1500 {
		h := r.intn(len(w.hosts))
		if w.hosts[h].kind == Trap {
			continue
		}
		a := r.intn(int(w.hosts[h].n))
		urls = append(urls, w.url(target{host: int32(h), kind: pkArticle, a: int64(a)}))
	}
	st := w.LinkStats(urls)
	t.Logf("%+v", st)
	check := func(name string, got, lo, hi float64) {
		if got < lo || got > hi {
			t.Errorf("%s = %.3f, want in [%g, %g]", name, got, lo, hi)
		}
	}
	check("pages", float64(st.Pages), 1000, 1500)
	check("median out-degree", st.MedianOut, 19, 28)
	check("mean out-degree", st.MeanOut, 45, 75)
	check("same-host share", st.SameHostShare, 0.70, 0.86)
	check("repeat share", st.RepeatShare, 0.22, 0.38)
	check("median body size", st.MedianBodySize, 15000, 26000)
}

func TestHostNames(t *testing.T) {
	w := newWeb(t, SmallConfig())
	for i, name := range w.Hosts() {
		if j, ok := w.HostIndex(name); !ok || j != i {
			t.Fatalf("HostIndex(%q) = %d, %v", name, j, ok)
		}
	}
	for _, bad := range []string{"h0001.sim.test", "h000001.sim.test", "h00030.sim.test", "h00001.sim.test.x",
		"x00001.sim.test", "h+0001.sim.test", "sim.test", "h00001sim.test"} {
		if _, ok := w.HostIndex(bad); ok {
			t.Errorf("HostIndex(%q) accepted", bad)
		}
	}
}

// The oracle equals what an independent breadth-first crawler over real
// HTTP fetches, on the small web with every pathology.
func TestOracleMatchesHTTPBFS(t *testing.T) { testOracleMatchesHTTPBFS(t, SmallConfig(), 400, 1500) }

// The same on the demo's web (≈ 30 000 URLs): SEXTANT_LONG=1.
func TestOracleMatchesHTTPBFSDefault(t *testing.T) {
	if os.Getenv("SEXTANT_LONG") == "" {
		t.Skip("set SEXTANT_LONG=1 to crawl the default web over HTTP")
	}
	testOracleMatchesHTTPBFS(t, DefaultConfig(), 0, 20000)
}

// crawlBFS serves w and crawls it from its seeds with the independent
// HTTP BFS crawler under rules, returning what it fetched.
func crawlBFS(t *testing.T, w *Web, rules Rules) []string {
	t.Helper()
	srv, err := Start(w, Options{NoLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	client := srv.Client()
	b := &httpBFS{client: client, rules: rules, robots: map[string]*robotstxt.RobotsData{}}
	isTrap := func(host string) bool {
		h, ok := w.HostIndex(host)
		return ok && w.hosts[h].kind == Trap
	}
	fetched := b.crawl(t, w.Seeds(), isTrap)
	client.CloseIdleConnections()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	return fetched
}

func testOracleMatchesHTTPBFS(t *testing.T, cfg Config, budget, minURLs int) {
	defer goleak.VerifyNone(t, serverLeaksOnly()...)
	w := newWeb(t, cfg)
	rules := Rules{MaxPagesPerHost: budget}
	res, err := w.Oracle(w.Seeds(), rules)
	if err != nil {
		t.Fatal(err)
	}
	fetched := crawlBFS(t, w, res.Rules)
	t.Logf("oracle %d URLs + traps %v; BFS fetched %d", len(res.Fetched), res.TrapHosts, len(fetched))
	if err := res.Check(fetched); err != nil {
		t.Fatal(err)
	}
	if len(res.Fetched) < minURLs || len(res.TrapHosts) == 0 {
		t.Fatalf("small web too small: %d URLs, %d trap hosts", len(res.Fetched), len(res.TrapHosts))
	}
	// Check must notice each kind of difference.
	trapURL := w.URL(res.TrapHosts[0], "/cal/2026-01/")
	for name, bad := range map[string][]string{
		"missing":    fetched[1:],
		"unexpected": append(append([]string{}, fetched...), "http://h00000.sim.test/orphan/0.html"),
		"bad trap":   append(append([]string{}, fetched...), w.URL(res.TrapHosts[0], "/cal/2026-13/")),
	} {
		if err := res.Check(bad); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: Check = %v", name, err)
		}
	}
	over := append([]string{}, fetched...)
	for i := 0; i < 500; i++ {
		over = append(over, w.URL(res.TrapHosts[0], "/deep/"+strings.Repeat("a/", i)))
	}
	if err := res.Check(over); err == nil || !strings.Contains(err.Error(), "trap budget exceeded on 1") {
		t.Errorf("trap over budget: Check = %v", err)
	}
	if err := res.Check(append(fetched, trapURL)); err != nil {
		t.Errorf("a valid trap URL within budget: %v", err)
	}
}

// Every robots.txt the generator writes parses without error (a parse
// error would silently mean allow-all), on the small and the default web.
func TestRobotsParse(t *testing.T) {
	for _, c := range []Config{SmallConfig(), DefaultConfig()} {
		w := newWeb(t, c)
		for _, host := range w.Hosts() {
			r, err := w.Respond(host, "/robots.txt")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != 200 {
				continue
			}
			if _, err := robotstxt.FromBytes(r.Body[:min(len(r.Body), 500<<10)]); err != nil {
				t.Errorf("%s (%v): %v", host, w.Pathology(mustIndex(w, host)), err)
			}
		}
	}
	w := newWeb(t, SmallConfig())
	if _, err := w.Respond("www.example.com", "/"); !errors.Is(err, ErrUnknownHost) {
		t.Errorf("unknown host: %v", err)
	}
}

// MaxDepth, Scope and MaxURLLength narrow the fetched set as documented.
func TestOracleRules(t *testing.T) {
	w := newWeb(t, SmallConfig())
	all, err := w.Oracle(w.Seeds(), Rules{})
	if err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1)
	one, err := w.Oracle(w.Seeds(), Rules{})
	runtime.GOMAXPROCS(prev)
	if err != nil || fmt.Sprint(one.Fetched, one.ByStatus, one.Links, one.Disallowed, one.OutOfScope) !=
		fmt.Sprint(all.Fetched, all.ByStatus, all.Links, all.Disallowed, all.OutOfScope) {
		t.Errorf("the oracle depends on GOMAXPROCS (%v)", err)
	}
	d0, err := w.Oracle(w.Seeds()[:1], Rules{MaxDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	home, _ := w.Respond(w.HostName(0), "/")
	want := map[string]bool{w.Seeds()[0]: true}
	for _, l := range home.Links {
		if strings.HasPrefix(l.URL, "http") && strings.Contains(l.URL, "://h") && strings.Contains(l.URL, ".sim.test/") {
			u := l.URL
			h := strings.SplitN(u, "/", 4)[2]
			if hi, ok := w.HostIndex(h); ok && w.Pathology(hi) != Trap && w.Pathology(hi) != Robots5xx {
				want[u] = true
			}
		}
	}
	if len(d0.Fetched) == 0 || len(d0.Fetched) > len(want) {
		t.Errorf("depth 1: %d URLs, want at most the seed and its %d links", len(d0.Fetched), len(want)-1)
	}
	for _, u := range d0.Fetched {
		if !want[u] && !strings.Contains(u, "robots") {
			// only robots.txt may remove links, never add them
			t.Errorf("depth 1 fetched %s, not linked from the seed", u)
		}
	}
	none, err := w.Oracle(w.Seeds(), Rules{Scope: "other.test"})
	if err != nil || len(none.Fetched) != 0 || none.OutOfScope != len(w.Seeds()) {
		t.Errorf("other scope: %v, %d URLs", err, len(none.Fetched))
	}
	short, err := w.Oracle(w.Seeds(), Rules{MaxURLLength: 36})
	if err != nil || len(short.Fetched) >= len(all.Fetched) || len(short.Fetched) == 0 {
		t.Errorf("short URLs: %v, %d of %d", err, len(short.Fetched), len(all.Fetched))
	}
	for _, u := range short.Fetched {
		if len(u) > 36 {
			t.Errorf("%s longer than 36", u)
		}
	}
	if _, err := w.Oracle(w.Seeds(), Rules{MaxPagesPerHost: 10}); !errors.Is(err, ErrBudget) {
		t.Errorf("tiny budget: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	w := newWeb(t, SmallConfig())
	sum, err := Describe(w)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := w.Oracle(w.Seeds(), Rules{})
	if sum.Reachable != res.Size() || sum.Hosts != 30 || sum.Articles != w.Pages() || sum.TrapHosts != 1 ||
		len(sum.Pathologies) != len(Pathologies()) || sum.Links.Pages < 500 {
		t.Fatalf("%+v", sum)
	}
	out := sum.String()
	for _, want := range []string{"30 hosts", fmt.Sprintf("fetches %d URLs", res.Size()), "gzip-bomb=1",
		"links per HTML page", "http://h00000.sim.test/"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if c := w.Config(); c.Seed != SmallConfig().Seed || w.Domain() != "sim.test" {
		t.Errorf("config %+v", c)
	}
}

// WriteBody writes what the server sends: the same bytes, Size of them.
func TestWriteBody(t *testing.T) {
	c := SmallConfig()
	c.StallTime = 10 * time.Millisecond
	w := newWeb(t, c)
	srv := startServer(t, w, Options{NoLatency: true})
	for _, hp := range [][2]string{
		{w.HostName(w.HostsWith(Stall)[0]), "/stall/1.html"},
		{w.HostName(w.HostsWith(Huge)[0]), "/huge/2.html"},
		{w.HostName(0), "/"},
	} {
		r, err := w.Respond(hp[0], hp[1])
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		flushed := false
		if err := r.WriteBody(context.Background(), &buf, func() { flushed = true }); err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Get(w.URL(hp[0], hp[1]))
		if err != nil {
			t.Fatal(err)
		}
		served, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if int64(buf.Len()) != r.Size || !bytes.Equal(served, buf.Bytes()) || flushed != (r.Stall > 0) {
			t.Errorf("%s%s: WriteBody %d bytes, Size %d, served %d, flushed %v", hp[0], hp[1], buf.Len(), r.Size,
				len(served), flushed)
		}
		if !bytes.HasSuffix(served, []byte("</body></html>\n")) {
			t.Errorf("%s%s: body does not end the document", hp[0], hp[1])
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, _ := w.Respond(w.HostName(w.HostsWith(Stall)[0]), "/stall/0.html")
	if err := r.WriteBody(ctx, io.Discard, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled WriteBody: %v", err)
	}
	if srv.Port() == 0 {
		t.Error("no port")
	}
}

// Links are spelled in every documented way, and popularity is skewed:
// home pages top the in-degree ranking and a few URLs get many links.
func TestLinkSpellingsAndPopularity(t *testing.T) {
	w := newWeb(t, SmallConfig())
	res, err := w.Oracle(w.Seeds(), Rules{})
	if err != nil {
		t.Fatal(err)
	}
	forms := map[string]func(raw string) bool{
		"root-relative":  func(r string) bool { return strings.HasPrefix(r, "/") && !strings.HasPrefix(r, "//") },
		"../":            func(r string) bool { return strings.HasPrefix(r, "../") },
		"./":             func(r string) bool { return strings.HasPrefix(r, "./") },
		"plain relative": func(r string) bool { return strings.HasPrefix(r, "p") && strings.HasSuffix(r, ".html") },
		"?query":         func(r string) bool { return strings.HasPrefix(r, "?") },
		"//host":         func(r string) bool { return strings.HasPrefix(r, "//") },
		"absolute":       func(r string) bool { return strings.HasPrefix(r, "http://h") || strings.HasPrefix(r, "https://h") },
		"mixed case": func(r string) bool {
			l := strings.ToLower(r)
			return strings.HasPrefix(l, "http") && strings.Contains(l, "://h") && !strings.HasPrefix(r, "http://h") && !strings.HasPrefix(r, "https://h")
		},
		":80":               func(r string) bool { return strings.Contains(r, ".test:80/") || strings.Contains(r, ".test:443/") },
		"/./":               func(r string) bool { return strings.Contains(r, "/./") },
		"/x/../":            func(r string) bool { return strings.Contains(r, "/x/../") },
		"%2e":               func(r string) bool { return strings.Contains(r, "/%2e/") },
		"fragment":          func(r string) bool { return strings.Contains(r, "#") },
		"literal space, é":  func(r string) bool { return strings.Contains(r, " café") },
		"percent-encoded é": func(r string) bool { return strings.Contains(r, "%C3%A9") },
		"external":          func(r string) bool { return strings.HasPrefix(r, "mailto:") },
	}
	tags := map[string]int{}
	count := map[string]int{}
	in := map[string]int{}
	bases := 0
	for _, u := range res.Fetched {
		host, pq, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://"), "/")
		r, err := w.Respond(host, "/"+pq)
		if err != nil || r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			continue
		}
		if r.Base != "" {
			bases++
		}
		for _, l := range r.Links {
			tags[l.Tag]++
			in[l.URL]++
			for name, f := range forms {
				if f(l.Raw) {
					count[name]++
				}
			}
		}
	}
	for name := range forms {
		if count[name] < 5 {
			t.Errorf("spelling %q used %d times", name, count[name])
		}
	}
	for _, tag := range []string{"a", "area", "link", "img", "srcset", "script", "iframe", "frame", "embed",
		"video", "source", "form", "meta-refresh"} {
		if tags[tag] < 5 {
			t.Errorf("tag %q used %d times", tag, tags[tag])
		}
	}
	if bases < 5 {
		t.Errorf("only %d pages with <base href>", bases)
	}
	type kv struct {
		url string
		n   int
	}
	var ranked []kv
	total := 0
	for u, n := range in {
		ranked = append(ranked, kv{u, n})
		total += n
	}
	sort.Slice(ranked, func(i, j int) bool { return ranked[i].n > ranked[j].n })
	top := 0
	for _, e := range ranked[:len(ranked)/100] {
		top += e.n
	}
	homes := 0
	for _, e := range ranked[:10] {
		if strings.Count(e.url, "/") == 3 && strings.HasSuffix(e.url, ".sim.test/") {
			homes++
		}
	}
	med := ranked[len(ranked)/2].n
	t.Logf("top 1%% of %d URLs get %.1f%% of %d links; %d of the top 10 are home pages; in-degree max %d, median %d",
		len(ranked), 100*float64(top)/float64(total), total, homes, ranked[0].n, med)
	if float64(top) < 0.08*float64(total) || homes < 8 || ranked[0].n < 20*med {
		t.Errorf("popularity not skewed enough")
	}
}
