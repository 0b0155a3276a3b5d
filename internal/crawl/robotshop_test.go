package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// TestRobotsRedirectToOtherHostPolite: the robots.txt of ten hosts
// a0…a9.test redirects to central.test (the pattern of sites that serve
// every subdomain's robots.txt from one host), which has pages of its own.
// The node follows each hop (RFC 9309 §2.3.1.2) in central.test's own
// politeness slot: central.test never sees two requests at once nor one
// sooner than MinDelay after the previous one, every a-host obeys the rules
// it got through the redirect, each robots.txt is asked for once, and the
// crawl log says how each robots.txt was obtained.
func TestRobotsRedirectToOtherHostPolite(t *testing.T) {
	const hosts, minDelay = 10, 30 * time.Millisecond
	type span struct{ from, to time.Time }
	var mu sync.Mutex
	hits := map[string]int{}
	var central []span
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		mu.Lock()
		hits[r.Host+r.URL.Path]++
		mu.Unlock()
		switch {
		case r.Host == "central.test":
			time.Sleep(2 * time.Millisecond)
			switch {
			case strings.HasPrefix(r.URL.Path, "/robots-for/"):
				fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			case r.URL.Path == "/robots.txt":
				fmt.Fprint(w, "User-agent: *\nAllow: /\n")
			case r.URL.Path == "/":
				for i := range 12 {
					fmt.Fprintf(w, `<a href="/c%d">c</a>`, i)
				}
			default:
				fmt.Fprintf(w, `<html>central leaf %s</html>`, r.URL.Path)
			}
			mu.Lock()
			central = append(central, span{start, time.Now()})
			mu.Unlock()
		case r.URL.Path == "/robots.txt":
			name := strings.TrimSuffix(r.Host, ".test")
			http.Redirect(w, r, "http://central.test/robots-for/"+name+".txt", http.StatusMovedPermanently)
		case r.URL.Path == "/":
			fmt.Fprintf(w, `<html>%s <a href="/private/x">x</a><a href="/pub/1">1</a><a href="/pub/2">2</a></html>`, r.Host)
		default: // distinct bodies: the content-seen test must not skip any
			fmt.Fprintf(w, `<html>leaf %s%s</html>`, r.Host, r.URL.Path)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	addr := strings.TrimPrefix(srv.URL, "http://")
	resolve := map[string]string{"central.test": addr}
	seeds := []string{"http://central.test/"}
	for i := range hosts {
		h := fmt.Sprintf("a%d.test", i)
		resolve[h] = addr
		seeds = append(seeds, "http://"+h+"/")
	}
	n, err := Open(Options{
		DataDir: dir, Workers: 4,
		Fetcher:          fetcher.Options{AllowPrivate: true, Resolve: resolve},
		Frontier:         frontier.Options{MinDelay: minDelay, MaxDelay: 100 * time.Millisecond, BorrowPoll: 10 * time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.Seed(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	fs := n.fr.Stats()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range hosts {
		h := fmt.Sprintf("a%d.test", i)
		if hits[h+"/robots.txt"] != 1 || hits["central.test/robots-for/a"+fmt.Sprint(i)+".txt"] != 1 {
			t.Errorf("%s: robots.txt asked %d times, its redirect target %d times; want 1 and 1",
				h, hits[h+"/robots.txt"], hits["central.test/robots-for/a"+fmt.Sprint(i)+".txt"])
		}
		if hits[h+"/private/x"] != 0 {
			t.Errorf("%s/private/x fetched: the rules from the redirect were not applied", h)
		}
		if hits[h+"/"] != 1 || hits[h+"/pub/1"] != 1 || hits[h+"/pub/2"] != 1 {
			t.Errorf("%s: pages fetched %d %d %d times, want once each", h, hits[h+"/"], hits[h+"/pub/1"], hits[h+"/pub/2"])
		}
	}
	if want := 1 + 1 + 12 + hosts + 1; len(central) != want { // + its /sitemap.xml probe
		t.Errorf("central.test served %d requests, want %d", len(central), want)
	}
	sort.Slice(central, func(i, j int) bool { return central[i].from.Before(central[j].from) })
	for i := 1; i < len(central); i++ {
		gap := central[i].from.Sub(central[i-1].to)
		if gap < 0 {
			t.Errorf("central.test: request %d started %v before request %d ended (two at once)", i, -gap, i-1)
		} else if gap < minDelay-5*time.Millisecond {
			t.Errorf("central.test: request %d started %v after request %d ended, want ≥ %v", i, gap, i-1, minDelay)
		}
	}
	if fs.Borrowed != hosts {
		t.Errorf("frontier lent %d slots, want %d (one per redirected robots.txt)", fs.Borrowed, hosts)
	}
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	followed := 0
	for _, e := range es {
		if testing.Verbose() {
			t.Logf("%s %d %s %s", e.URL, e.Status, e.Outcome, e.Note)
		}
		note := strings.ReplaceAll(e.Note, "_", " ") // the log's field encoding
		if e.Outcome == OutcomeRobots && strings.Contains(note, "fetched in that host's politeness slot (parsed)") &&
			strings.Contains(note, "http://central.test/robots-for/") {
			followed++
		}
	}
	if followed != hosts {
		t.Errorf("%d crawl-log lines say a robots.txt was fetched through the redirect, want %d", followed, hosts)
	}
	t.Logf("central.test: %d requests; frontier: %d slots lent, %d borrow refusals", len(central), fs.Borrowed, fs.BorrowWaits)
}
