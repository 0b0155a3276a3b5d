package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

func TestThousands(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 2934: "2,934", 1234567: "1,234,567"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// Every drop cause the engine counts is named, with the knob as the kind
// of run sets it (a flag, or a node's config key).
func TestDrops(t *testing.T) {
	st := crawl.Stats{ID: "n1", BudgetDropped: 2934, LinksTooDeep: 5, LinksFiltered: 7, LinksNoFollow: 2,
		RobotsDisallowed: 3, PrivateRefused: 1, FetchHTTPErr: 4, FetchErr: 6}
	in := []Input{{Stats: st, Limits: Limits{MaxPagesPerHost: 1000, MaxDepth: 3}}}
	r := Build(KindCrawl, in, time.Second)
	var buf bytes.Buffer
	r.WriteText(&buf, "t")
	for _, want := range []string{
		"dropped         2,934 URLs dropped by the per-host budget of 1,000: raise --max-pages-per-host\n",
		"5 links dropped beyond the depth limit of 3: raise --max-depth\n",
		"7 links filtered out", "2 links not followed for nofollow", "3 URLs disallowed by robots.txt",
		"1 URLs refused at a private or loopback address: --allow-private allows them",
		"4 fetches answered with an HTTP error", "6 fetches failed without a response",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, buf.String())
		}
	}
	if len(r.Dropped) != 8 || r.Dropped[0].Cause != "host_budget" || r.Dropped[0].N != 2934 {
		t.Errorf("Dropped = %+v", r.Dropped)
	}
	node := Build(KindNode, in, time.Second)
	if l := node.DropLines()[0]; !strings.HasSuffix(l, "raise the config's max_pages_per_host") {
		t.Errorf("node: %q", l)
	}
	if l := Build(KindCrawl, []Input{{Stats: crawl.Stats{ID: "n1"}}}, time.Second).DropLines(); len(l) != 1 || !strings.HasPrefix(l[0], "nothing dropped") {
		t.Errorf("nothing dropped: %q", l)
	}
}
