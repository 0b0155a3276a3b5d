package crawl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// explainMissing logs, for each URL the oracle has and no crawl log does
// (at most 10), its host's owner in each view and every crawl-log line of
// the page it is a variant of (the URL without its query), so that a rare
// loss seen only under load leaves a diagnosis behind.
func (c *elasticCluster) explainMissing(want []string, got []string, views ...hostsplit.View) {
	t := c.t
	var all []LogEntry
	for _, p := range c.logs {
		es, err := ReadLogFile(p)
		if err != nil {
			t.Log(err)
			return
		}
		all = append(all, es...)
	}
	rings := make([]*hostsplit.Ring, len(views))
	for i, v := range views {
		rings[i], _ = hostsplit.NewRing(v.IDs(), false)
	}
	n := 0
	for _, u := range want {
		if _, found := slices.BinarySearch(got, u); found || n == 10 {
			continue
		}
		n++
		h, _ := hostsplit.Host(u)
		var owners []string
		for i, r := range rings {
			owners = append(owners, fmt.Sprintf("%s@%d", r.Owner(h), views[i].Epoch))
		}
		t.Logf("missing %s: owners %v", u, owners)
		base, _, _ := strings.Cut(u, "?")
		for _, e := range all {
			if e.Via == base || strings.HasPrefix(e.URL, base) { // the page, its variants, what was found on it
				t.Logf("  %s %s epoch %d %s status %d via %s", e.Time.Format("15:04:05.000"), e.Node, e.Epoch, e.URL, e.Status, e.Via)
			}
		}
	}
}
