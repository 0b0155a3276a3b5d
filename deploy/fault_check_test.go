package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/simweb"
)

// checkLogs copies the nodes' crawl logs out and checks their union
// against the oracle, and the URLs fetched twice against the bound of the
// kill or restart they are blamed on (a kill may repeat up to the fetches
// in flight; a graceful stop, etcd's quorum loss and a failed add none).
func (c *cluster) checkLogs() {
	t := c.t
	events := c.events
	logf := c.logf
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	// SEXTANT_FAULT_KEEP=DIR keeps the nodes' crawl logs for a post-mortem.
	logDir := os.Getenv("SEXTANT_FAULT_KEEP")
	keep := logDir != ""
	if !keep {
		logDir = t.TempDir()
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	times := map[string][]time.Time{} // fetch times of each URL
	owner := map[string]string{}
	failed := map[string]bool{} // last attempt was a network error
	retries := 0
	kills := 1
	for _, id := range c.ids {
		dst := filepath.Join(logDir, id+".log")
		c.must("cp", c.name(id)+":/data/crawl.log", dst)
		if keep {
			// The whole data dir and the final metrics, for a post-mortem.
			c.must("cp", c.name(id)+":/data", filepath.Join(logDir, id+"-data"))
			if m, ok := c.metrics(id); ok {
				var lines []string
				for k, v := range m {
					lines = append(lines, fmt.Sprintf("%s %v", k, v))
				}
				sort.Strings(lines)
				os.WriteFile(filepath.Join(logDir, id+".metrics"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
			}
		}
		entries, bad := readLog(t, dst)
		if bad > kills {
			t.Errorf("%s: %d malformed crawl log lines (at most one per kill expected)", id, bad)
		}
		for _, e := range entries {
			if e.Node != id {
				t.Errorf("%s's log has a line of %s", id, e.Node)
			}
			if e.Outcome == crawl.OutcomeRobots || !onWeb(web, e.URL) {
				continue
			}
			if failed[e.URL] {
				retries++ // a retry after a failed attempt is not a repeat
			} else {
				count[e.URL]++
				times[e.URL] = append(times[e.URL], e.Time)
				owner[e.URL] = id
			}
			failed[e.URL] = e.Outcome == crawl.OutcomeError
		}
		logf("%s: %d log lines", id, len(entries))
	}
	var got, dups []string
	for u, n := range count {
		got = append(got, u)
		for range n - 1 {
			dups = append(dups, u)
		}
	}
	sort.Strings(got)
	sort.Strings(dups)
	blame := map[int][]string{}
	for _, u := range dups {
		ts := times[u]
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		first, second := ts[len(ts)-2], ts[len(ts)-1]
		cause := blameRepeat(events, owner[u], first, second)
		logf("repeat %s: fetched at %s and %s, blamed on %d", u, first.Format("15:04:05.000"), second.Format("15:04:05.000"), cause)
		blame[cause] = append(blame[cause], u)
	}
	for i, ev := range append(events, faultEvent{what: "no fault"}) {
		if i == len(events) {
			i = -1
		}
		us := blame[i]
		bound := 0
		if ev.what == "kill" {
			bound = faultWorkers
		}
		logf("%s %s: %d repeated fetches (bound %d) %v", ev.what, ev.node, len(us), bound, us[:min(5, len(us))])
		if len(us) > bound {
			t.Errorf("%s %s: %d URLs fetched twice, more than %d: %v", ev.what, ev.node, len(us), bound, us[:min(10, len(us))])
		}
	}
	logf("%d distinct URLs fetched, %d repeats (bound %d), %d retries after errors; oracle %d", len(got), len(dups), kills*faultWorkers, retries, oracle.Size())
	if err := oracle.Check(got); err != nil {
		t.Errorf("union of the crawl logs differs from the oracle: %v", err)
	}
}

// blameRepeat returns the index in events of the stop a URL of node's,
// fetched at first and again at second, is blamed on, or -1: the first
// stop of that node whose window [at, end] ends after the first fetch and
// begins before the second, the one that can have lost the first fetch's
// completion. A later stop may come before the second fetch too (a slow
// host's turn), so the last stop before it is not the cause.
func blameRepeat(events []faultEvent, node string, first, second time.Time) int {
	for i, ev := range events {
		if ev.node == node && ev.end.After(first) && ev.at.Before(second) {
			return i
		}
	}
	return -1
}
