package crawl

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/simweb"
)

// startCluster starts n members crawling srv, with certificates from a fresh
// cluster CA, each in its own data dir under root.
func startCluster(t *testing.T, root string, n int, srv *simweb.Server, domain string) []*Member {
	t.Helper()
	return startClusterWith(t, root, n, srv, domain, nil)
}

// startClusterWith is startCluster with each node's options passed through
// edit (if not nil) first.
func startClusterWith(t *testing.T, root string, n int, srv *simweb.Server, domain string, edit func(*Options)) []*Member {
	t.Helper()
	members, seats, err := LoopbackCluster(filepath.Join(root, "pki"), n)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*Member, n)
	for i, seat := range seats {
		o := testNodeOptions(t, filepath.Join(root, seat.ID), srv, domain)
		o.Workers = 8
		if edit != nil {
			edit(&o)
		}
		m, err := StartMember(MemberOptions{Node: o, Self: seat.ID, Members: members, TLS: seat.TLS, Listener: seat.Listener, PeerCacheSize: 1024})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = m
	}
	return out
}

func TestThreeNodeCrawlMatchesOracle(t *testing.T) {
	web, srv, oracle := smallWeb(t, 1<<20)
	root := t.TempDir()
	ms := startCluster(t, root, 3, srv, web.Domain())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, m := range ms {
		if err := m.Seed(ctx, web.Seeds()); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	for i, m := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.Run(ctx) }()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("cluster did not terminate in time")
	}
	var logs []string
	ring := ms[0].Split.Ownership().Ring()
	for i, m := range ms {
		if errs[i] != nil {
			t.Errorf("node %d: %v", i, errs[i])
		}
		st, sp := m.Node.Stats(), m.Split.Stats()
		t.Logf("%s: fetches %d, local links %d, remote %d, sent %d, suppressed-by-cache traffic reduction %.2f",
			st.ID, st.Fetches, st.LinksLocal, st.LinksRemote, sp.Total.SentURLs, sp.TrafficReduction())
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		p := filepath.Join(root, fmt.Sprintf("node-%d", i), "crawl.log")
		logs = append(logs, p)
		es, err := ReadLogFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if owner, _ := ring.OwnerOfURL(e.URL); string(owner) != e.Node {
				t.Errorf("%s fetched %s owned by %s", e.Node, e.URL, owner)
				break
			}
		}
	}
	got, dups := fetchedURLs(t, logs...)
	if len(dups) > 0 {
		t.Errorf("%d URLs fetched more than once cluster-wide, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	if err := oracle.Check(got); err != nil {
		t.Errorf("union of fetched URLs differs from the oracle's (%d fetched, oracle %d): %v", len(got), oracle.Size(), err)
	}
}
