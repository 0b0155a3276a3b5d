package crawl

import (
	"context"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// specSite serves pages given as "HOST/PATH STATUS BODY" lines (BODY: the
// Location of a 3xx; "\n" is a newline) for any host on one loopback
// listener; unknown pages are 404.
type specSite struct {
	mu    sync.Mutex
	pages map[string]specPage // host+path
	srv   *httptest.Server
}

type specPage struct {
	status int
	body   string
}

func newSpecSite(t *testing.T) *specSite {
	s := &specSite{pages: map[string]specPage{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
		s.mu.Lock()
		p, ok := s.pages[host+r.URL.RequestURI()]
		s.mu.Unlock()
		switch {
		case !ok:
			http.NotFound(w, r)
		case p.status >= 300 && p.status < 400:
			http.Redirect(w, r, p.body, p.status)
		default:
			ct := "text/html"
			switch {
			case strings.HasSuffix(r.URL.Path, ".txt"):
				ct = "text/plain"
			case strings.HasSuffix(r.URL.Path, ".xml"):
				ct = "application/xml"
			case strings.HasSuffix(r.URL.Path, ".png"):
				ct = "image/png"
			}
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(p.status)
			fmt.Fprint(w, p.body)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// define parses the page lines of a datadriven input.
func (s *specSite) define(t *testing.T, input string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range strings.Split(input, "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) < 2 {
			continue
		}
		st, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("page %q: %v", line, err)
		}
		body := ""
		if len(f) == 3 {
			body = strings.ReplaceAll(f[2], `\n`, "\n")
		}
		s.pages[f[0]] = specPage{st, body}
	}
}

// body returns the served body of URL u (http://HOST/PATH).
func (s *specSite) body(u string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pages[strings.TrimPrefix(u, "http://")]
	return p.body, ok && p.status < 300
}

// options are a node's, crawling hosts under domain on s.
func (s *specSite) options(t *testing.T, dir, domain string) Options {
	f, err := extract.NewFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{domain}, MaxRepeatedSegments: -1})
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(s.srv.URL, "http://")
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	return Options{
		DataDir: dir, Workers: 4,
		Fetcher:          fetcher.Options{AllowPrivate: true, DialContext: dial, FetchTimeout: 3 * time.Second},
		Frontier:         frontier.Options{MinDelay: 0, MaxDelay: 50 * time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
		Filter:           Filter{f},
	}
}

// provenance prints the crawl logs' lines sorted by URL: URL, outcome,
// hops and via ("-" when empty); digest=ok when the digest is the SHA-1 of
// the body served, and the protocol.
func (s *specSite) provenance(t *testing.T, logs ...string) string {
	var lines []string
	for _, p := range logs {
		es, err := ReadLogFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			line := fmt.Sprintf("%s %s hops=%s via=%s", e.URL, e.Outcome, dash(e.Hops), dash(e.Via))
			if body, ok := s.body(e.URL); ok && e.Outcome == OutcomeOK {
				sum := sha1.Sum([]byte(body))
				if e.Digest == "sha1:"+base32.StdEncoding.EncodeToString(sum[:]) {
					line += " digest=ok"
				} else {
					line += " digest=" + dash(e.Digest)
				}
			}
			if e.Outcome != OutcomeRobots {
				line += " proto=" + dash(e.Proto)
			}
			lines = append(lines, line)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// TestProvenance runs testdata/provenance: "site" defines pages, "crawl"
// crawls them on one node from the seeds given (stop=N: stop after N
// fetches and resume from the data dir, to check a restart keeps the vias
// and hop paths of queued URLs) and prints provenance.
func TestProvenance(t *testing.T) {
	datadriven.RunTest(t, "testdata/provenance", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "site":
			site := newSpecSite(t)
			site.define(t, d.Input)
			curSite = site
			return ""
		case "crawl":
			var seeds []string
			var stop int
			sitemaps := SitemapsOn
			for _, a := range d.CmdArgs {
				switch a.Key {
				case "seed":
					seeds = append(seeds, a.Vals...)
				case "stop":
					stop, _ = strconv.Atoi(a.Vals[0])
				case "sitemaps":
					sitemaps = a.Vals[0]
				}
			}
			dir := t.TempDir()
			o := curSite.options(t, dir, "hop.test")
			o.Sitemaps = sitemaps
			if stop > 0 {
				o.MaxFetches = uint64(stop)
				n, err := Open(o)
				if err != nil {
					t.Fatal(err)
				}
				if st := crawlToEnd(t, n, seeds, time.Minute); st.Fetches != uint64(stop) {
					t.Fatalf("first run fetched %d, want %d", st.Fetches, stop)
				}
				o.MaxFetches = 0
				seeds = nil
			}
			n, err := Open(o)
			if err != nil {
				t.Fatal(err)
			}
			crawlToEnd(t, n, seeds, time.Minute)
			return curSite.provenance(t, filepath.Join(dir, crawlLogFile))
		}
		return "unknown command " + d.Cmd
	})
}

var curSite *specSite

// A URL discovered on one member and fetched by another carries its via
// and hop path across the peer batch: the cross-host link, redirect and
// embed are logged by the owner of their host with the discovering page
// as via; each host's robots.txt by its owner, via the URL that needed it.
func TestClusterProvenance(t *testing.T) {
	got := clusterProvenance(t, 0)
	want := strings.Join([]string{
		"node-0 http://A/ - -",
		"node-0 http://A/back LRL http://B/y",
		"node-0 http://A/robots.txt P http://A/", // robots.txt's own line: the seed's prerequisite
		"node-1 http://B/i.png E http://A/",
		"node-1 http://B/robots.txt EP http://B/i.png", // the first URL of B needing it
		"node-1 http://B/x L http://A/",
		"node-1 http://B/y LR http://B/x",
	}, "\n")
	if got != want {
		t.Errorf("cluster crawl log (node URL hops via):\n%s\nwant:\n%s", got, want)
	}
}

// MaxDepth holds across members: a URL received from a peer takes the
// depth its hop path implies. Before, it started again at depth 0, and
// http://A/back (3 hops: L, R, L) was fetched with MaxDepth 2.
func TestClusterMaxDepth(t *testing.T) {
	got := clusterProvenance(t, 2)
	want := strings.Join([]string{
		"node-0 http://A/ - -",
		"node-0 http://A/robots.txt P http://A/",
		"node-1 http://B/i.png E http://A/",
		"node-1 http://B/robots.txt EP http://B/i.png",
		"node-1 http://B/x L http://A/",
		"node-1 http://B/y LR http://B/x",
	}, "\n")
	if got != want {
		t.Errorf("cluster crawl log with MaxDepth 2 (node URL hops via):\n%s\nwant:\n%s", got, want)
	}
}

// clusterProvenance crawls a two-host site on two members, the seed's host
// owned by node-0 and the other by node-1, and returns their crawl logs'
// lines as "NODE URL HOPS VIA", sorted, the hosts written A and B.
func clusterProvenance(t *testing.T, maxDepth int) string {
	t.Helper()
	site := newSpecSite(t)
	root := t.TempDir()
	members, seats, err := LoopbackCluster(filepath.Join(root, "pki"), 2)
	if err != nil {
		t.Fatal(err)
	}
	var ms []*Member
	for _, seat := range seats {
		o := site.options(t, filepath.Join(root, seat.ID), "hop.test")
		o.Sitemaps, o.MaxDepth = SitemapsOff, maxDepth
		m, err := StartMember(MemberOptions{Node: o, Self: seat.ID, Members: members, TLS: seat.TLS, Listener: seat.Listener, PeerCacheSize: 1024})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	// A seed host owned by the first member, a linked host by the second.
	ring := ms[0].Split.Ownership().Ring()
	var onA, onB string
	for i := 0; onA == "" || onB == ""; i++ {
		h := fmt.Sprintf("h%d.hop.test", i)
		switch string(ring.Owner(h)) {
		case seats[0].ID:
			onA = cmpOr(onA, h)
		case seats[1].ID:
			onB = cmpOr(onB, h)
		}
	}
	site.define(t, strings.NewReplacer("A", onA, "B", onB).Replace(
		`A/ 200 <a href="http://B/x">x</a><img src="http://B/i.png">
B/x 301 http://B/y
B/y 200 <a href="http://A/back">back</a>
B/i.png 200 png
A/back 200 leaf`))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := ms[0].Seed(ctx, []string{"http://" + onA + "/"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Run(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("cluster did not finish")
	}
	var logs []string
	for _, m := range ms {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}
	got := map[string]string{}
	for _, seat := range seats {
		p := filepath.Join(root, seat.ID, crawlLogFile)
		logs = append(logs, p)
		es, err := ReadLogFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			got[strings.NewReplacer(onA, "A", onB, "B").Replace(fmt.Sprintf("%s %s %s %s", e.Node, e.URL, dash(e.Hops), dash(e.Via)))] = ""
		}
	}
	var lines []string
	for l := range got {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
