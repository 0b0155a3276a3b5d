package crawl

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"github.com/sextant-crawler/sextant/simweb"
)

// startCluster starts n members crawling srv, with certificates from a fresh
// cluster CA, each in its own data dir under root.
func startCluster(t *testing.T, root string, n int, srv *simweb.Server, domain string) []*Member {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("node-%d", i)
	}
	pki := filepath.Join(root, "pki")
	if err := tlsutil.WriteCluster(pki, ids, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	lis := make([]net.Listener, n)
	members := make([]hostsplit.Member, n)
	for i := range lis {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis[i] = l
		members[i] = hostsplit.Member{ID: hostsplit.NodeID(ids[i]), Addr: l.Addr().String()}
	}
	out := make([]*Member, n)
	for i := range out {
		cert, key := tlsutil.NodeFiles(pki, ids[i])
		tn, err := tlsutil.Load(filepath.Join(pki, "ca.pem"), cert, key)
		if err != nil {
			t.Fatal(err)
		}
		o := testNodeOptions(t, filepath.Join(root, ids[i]), srv, domain)
		o.Workers = 8
		m, err := StartMember(MemberOptions{Node: o, Self: ids[i], Members: members, TLS: tn, Listener: lis[i], PeerCacheSize: 1024})
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
	ring := ms[0].Split.Ring()
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
