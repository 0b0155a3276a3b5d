package crawl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/killtest"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"github.com/sextant-crawler/sextant/simweb"
)

// Environment of a cluster node child run by TestClusterKillNine.
const (
	ckRootEnv  = "SEXTANT_CLUSTERKILL_ROOT"  // data root with pki/
	ckIndexEnv = "SEXTANT_CLUSTERKILL_INDEX" // this node's index
	ckAddrsEnv = "SEXTANT_CLUSTERKILL_ADDRS" // comma-separated gRPC addresses
	ckWebEnv   = "SEXTANT_CLUSTERKILL_WEB"   // simweb listener
	ckWorkers  = 6
)

// TestClusterKillChild is one node of the cluster of TestClusterKillNine.
// It does nothing in a normal run.
func TestClusterKillChild(t *testing.T) {
	root := os.Getenv(ckRootEnv)
	if root == "" {
		t.Skip("child of TestClusterKillNine only")
	}
	idx, _ := strconv.Atoi(os.Getenv(ckIndexEnv))
	addrs := strings.Split(os.Getenv(ckAddrsEnv), ",")
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	members := make([]hostsplit.Member, len(addrs))
	ids := make([]string, len(addrs))
	for i, a := range addrs {
		ids[i] = fmt.Sprintf("node-%d", i)
		members[i] = hostsplit.Member{ID: hostsplit.NodeID(ids[i]), Addr: a}
	}
	pki := filepath.Join(root, "pki")
	cert, key := tlsutil.NodeFiles(pki, ids[idx])
	tn, err := tlsutil.Load(filepath.Join(pki, "ca.pem"), cert, key)
	if err != nil {
		t.Fatal(err)
	}
	lf, err := NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{web.Domain()}, MaxRepeatedSegments: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := StartMember(MemberOptions{
		Node: Options{
			DataDir: filepath.Join(root, ids[idx]), Workers: ckWorkers,
			Fetcher: fetcher.Options{AllowPrivate: true, Resolve: map[string]string{web.Domain(): os.Getenv(ckWebEnv)}, TLSConfig: childTLS(t),
				FetchTimeout: 3 * time.Second, BodyCap: killBodyCap},
			Frontier: frontier.Options{MinDelay: 0, Factor: 2, MaxDelay: 50 * time.Millisecond,
				FailureBackoff: 10 * time.Millisecond, MaxFailureBackoff: 100 * time.Millisecond},
			DUEFlushInterval: 50 * time.Millisecond,
			MaxPagesPerHost:  1000,
			Filter:           lf,
		},
		Self: ids[idx], Members: members, TLS: tn, PeerCacheSize: 1024,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	if err := m.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	runErr := m.Run(ctx)
	if ctx.Err() != nil { // stuck: report the cluster's view
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		sts, err := m.Split.Transport().ClusterStatus(sctx)
		scancel()
		for _, st := range sts {
			t.Logf("%s idle=%v frontier=%d inflight=%d buffered=%d channels=%+v", st.Node, st.Idle, st.FrontierSize, st.InFlight, st.BufferedURLs, st.Channels)
		}
		t.Logf("cluster status: %v; local idle=%v due=%+v", err, m.Node.Idle(), m.Node.due.Stats())
	}
	// Keep serving Status a little: peers that have not yet seen two
	// all-idle rounds need this node to answer them (a node of a real
	// cluster stays up until SIGTERM).
	time.Sleep(3 * time.Second)
	if err := m.Close(); err != nil {
		t.Error(err)
	}
	if runErr != nil || ctx.Err() != nil {
		t.Fatalf("node %d: run %v, ctx %v", idx, runErr, ctx.Err())
	}
}

// Issue 6: a 3-node cluster (separate processes, mTLS gRPC) crawls simweb
// while one node is SIGKILLed at random moments and restarted on its data
// dir: the union of fetched URLs equals the oracle's set, and repeated
// fetches stay within the URLs in flight at the kills.
func TestClusterKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	web, srv, oracle := smallWeb(t, killBodyCap)
	root := t.TempDir()
	const n = 3
	ids := []string{"node-0", "node-1", "node-2"}
	if err := tlsutil.WriteCluster(filepath.Join(root, "pki"), ids, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	addrs := freeAddrs(t, n) // for the children
	start := func(i int) *killtest.Child {
		return killtest.Start(t, killtest.Options{Run: "TestClusterKillChild", Env: []string{ckRootEnv + "=" + root, ckIndexEnv + "=" + strconv.Itoa(i),
			ckAddrsEnv + "=" + strings.Join(addrs, ","), ckWebEnv + "=" + srv.Addr(), caEnv(srv)}})
	}
	nodes := make([]*killtest.Child, n)
	for i := range nodes {
		nodes[i] = start(i)
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 11))
	t.Logf("kill schedule seed %d", seed)
	kills := 0
	for trial := 0; trial < 2; trial++ {
		victim := rng.IntN(n)
		delay := time.Duration(500+rng.IntN(2500)) * time.Millisecond
		select {
		case <-nodes[victim].Done(): // finished already: the crawl is over
			continue
		case <-time.After(delay):
		}
		if !nodes[victim].Kill() { // it finished meanwhile
			if err := nodes[victim].Err(); err != nil {
				t.Fatalf("node-%d failed before its kill: %v\n%.2000s", victim, err, nodes[victim].Output())
			}
			continue
		}
		kills++
		t.Logf("trial %d: SIGKILL node-%d after %v", trial, victim, delay)
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond) // down for a while
		nodes[victim] = start(victim)
	}
	deadline := time.Now().Add(4 * time.Minute)
	for i, nd := range nodes {
		if err := nd.Wait(time.Until(deadline)); err != nil {
			t.Errorf("node-%d: %v\n%.2000s", i, err, nd.Output())
		}
	}
	fetched, extra, dups := serverFetched(web, srv)
	// Exact, trap hosts included: the per-host budget is persisted with
	// each owner's frontier, so a trap host gets one budget over all the
	// runs (Check fails on a trap host over oracle.Rules.MaxPagesPerHost).
	if err := oracle.Check(fetched); err != nil {
		t.Errorf("after %d kills the fetched set differs from the oracle's: %v", kills, err)
	}
	perTrap := map[string]int{}
	for _, u := range fetched {
		for _, h := range oracle.TrapHosts {
			if strings.HasPrefix(u, "http://"+h+"/") {
				perTrap[h]++
			}
		}
	}
	t.Logf("trap hosts: URLs fetched %v (budget %d URLs admitted per host)", perTrap, oracle.Rules.MaxPagesPerHost)
	if extra > ckWorkers*kills {
		t.Errorf("%d repeated fetches after %d kills, want ≤ %d: %v", extra, kills, ckWorkers*kills, dups[:min(10, len(dups))])
	}
	t.Logf("%d kills, %d URLs fetched (oracle %d + traps), %d repeated", kills, len(fetched), oracle.Size(), extra)
}

// serverFetched returns the URLs simweb served (robots.txt and its redirect
// hops aside, hosts of the web only), the number of repeated requests and
// the repeated URLs.
func serverFetched(web *simweb.Web, srv *simweb.Server) (fetched []string, extra int, dups []string) {
	count := map[string]int{}
	for host, reqs := range srv.Log() {
		if _, ok := web.HostIndex(host); !ok {
			continue
		}
		for _, r := range reqs {
			if r.Path == "/robots.txt" || strings.HasPrefix(r.Path, "/robots/") {
				continue
			}
			scheme := "http://"
			if r.TLS {
				scheme = "https://"
			}
			count[scheme+host+r.Path]++
		}
	}
	for u, c := range count {
		fetched = append(fetched, u)
		if c > 1 {
			dups = append(dups, fmt.Sprintf("%s×%d", u, c))
			extra += c - 1
		}
	}
	return fetched, extra, dups
}

// freeAddrs reserves n free loopback ports (listen, note, close) for child
// node processes to bind.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = l.Addr().String()
		l.Close()
	}
	return addrs
}
