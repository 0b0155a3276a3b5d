package crawl

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/simweb"
)

// Trap budget end to end (IRLbot's BEAST: slow a trap host before dropping
// it). One hub page links first to 60 pages of a trap host, then to pages
// of normal hosts. With a soft budget of 5 and a hard one of 20 the trap
// host's first 5 URLs keep their priority, the next 15 are queued at low
// priority and must be fetched after every normal page although they were
// discovered first, and the other 40 — and every link the trap pages add —
// are dropped and counted. One worker and one back queue make the fetch
// order the frontier's order.
func TestSoftBudgetSlowsTrapHost(t *testing.T) {
	const (
		domain            = "beast.test"
		trap              = "trap." + domain
		trapLinks         = 60
		soft, hard        = 5, 20
		normHosts, normPg = 8, soft - 1 // normal hosts stay within the soft budget
	)
	root := t.TempDir()
	write := func(host, p, body string) {
		f := filepath.Join(root, host, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("<html><body>"+body+"</body></html>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var hub strings.Builder
	for i := range trapLinks {
		fmt.Fprintf(&hub, `<a href="http://%s/p%d.html">t</a>`, trap, i)
		// Every trap page links to two more trap URLs: over the hard budget.
		write(trap, fmt.Sprintf("p%d.html", i), fmt.Sprintf(`<a href="p%d.html">n</a><a href="p%d.html">n</a>`, i+100, i+200))
	}
	normal := map[string]bool{}
	for h := range normHosts {
		host := fmt.Sprintf("n%d.%s", h, domain)
		for p := range normPg {
			fmt.Fprintf(&hub, `<a href="http://%s/%d.html">n</a>`, host, p)
			write(host, fmt.Sprintf("%d.html", p), fmt.Sprintf("page %d of %s", p, host))
			normal[fmt.Sprintf("http://%s/%d.html", host, p)] = true
		}
	}
	write("hub."+domain, "index.html", hub.String())

	srv, err := simweb.StartDir(root, simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	lf, err := NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{domain}, MaxRepeatedSegments: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n, err := Open(Options{
		DataDir: dir, Workers: 1,
		Fetcher: fetcher.Options{AllowPrivate: true, DialContext: srv.DialContext, TLSConfig: srv.TLSClientConfig(), FetchTimeout: 5 * time.Second},
		Frontier: frontier.Options{MinDelay: 0, Factor: 1, MaxDelay: 10 * time.Millisecond,
			BackQueues: 1, MaxBackQueues: 1},
		DUEFlushInterval: 20 * time.Millisecond,
		MaxPagesPerHost:  hard,
		SoftPagesPerHost: soft,
		Filter:           lf,
	})
	if err != nil {
		t.Fatal(err)
	}
	st := crawlToEnd(t, n, []string{"http://hub." + domain + "/"}, 2*time.Minute)

	// Fetch order, from the crawl log (one worker: the log's order).
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	var trapIdx []int // trap page numbers in fetch order
	lastNormal, firstLow := -1, -1
	seenNormal := 0
	for i, e := range es {
		if e.Outcome == OutcomeRobots {
			continue
		}
		if normal[e.URL] {
			seenNormal++
			lastNormal = i
			continue
		}
		rest, ok := strings.CutPrefix(e.URL, "http://"+trap+"/p")
		if !ok {
			continue
		}
		k, err := strconv.Atoi(strings.TrimSuffix(rest, ".html"))
		if err != nil {
			t.Fatalf("unexpected trap URL %s", e.URL)
		}
		trapIdx = append(trapIdx, k)
		if len(trapIdx) == soft+1 {
			firstLow = i
		}
	}
	if seenNormal != normHosts*normPg {
		t.Errorf("%d normal pages fetched, want %d", seenNormal, normHosts*normPg)
	}
	// Exactly the first `hard` trap URLs of the hub page are fetched, each once.
	got := append([]int(nil), trapIdx...)
	sort.Ints(got)
	if len(got) != hard || got[0] != 0 || got[hard-1] != hard-1 {
		t.Fatalf("trap pages fetched %v, want p0…p%d", got, hard-1)
	}
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Errorf("trap page p%d fetched twice", got[i])
		}
	}
	if firstLow <= lastNormal {
		t.Errorf("a trap URL over the soft budget was fetched (log line %d) before the last normal page (line %d): not deprioritised", firstLow, lastNormal)
	}
	if st.Frontier.BudgetLowered != hard-soft {
		t.Errorf("BudgetLowered %d, want %d", st.Frontier.BudgetLowered, hard-soft)
	}
	// Dropped: the hub's links past the hard budget, the two links of
	// every trap page fetched, and the trap host's /sitemap.xml probe
	// (offered at its first fetch, when the hub's links filled its budget).
	if want := uint64(trapLinks - hard + 2*hard + 1); st.BudgetDropped != want {
		t.Errorf("BudgetDropped %d, want %d", st.BudgetDropped, want)
	}
	t.Logf("trap pages in fetch order %v; last normal page at log line %d, first lowered trap page at %d; lowered %d, dropped %d",
		trapIdx, lastNormal, firstLow, st.Frontier.BudgetLowered, st.BudgetDropped)
}
