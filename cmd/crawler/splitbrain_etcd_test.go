package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/coord"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/killtest"
	"github.com/sextant-crawler/sextant/internal/netcut"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"github.com/sextant-crawler/sextant/simweb"
)

// noFenceEnv, set, runs TestSplitBrainFenced without --etcd on the nodes:
// the defect as it was (the test must then fail).
const noFenceEnv = "SEXTANT_SPLITBRAIN_NO_FENCE"

// splitTTL is the nodes' etcd lease TTL in TestSplitBrainFenced.
const splitTTL = 2 * time.Second

// splitElection is etcd's election timeout: TTL 2 s needs ≤ 0.55 s.
const splitElection = 500 * time.Millisecond

// Issue 25, defect 1, with separate `crawler node` processes fenced on an
// embedded etcd (mTLS, RBAC): node-2 is cut off from its peers and from
// etcd (a TCP proxy per link), `crawler cluster remove --lost` removes it
// after the control plane revoked its lease and waited out the TTL, and
// the links heal. node-2 must have stopped fetching before the survivors
// took its hosts (no request it started after the new view was committed,
// so no URL fetched twice beyond those in flight and no two nodes on one
// host at once), must learn from etcd that it was removed, and exit.
func TestSplitBrainFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	s := newSplitBrain(t, os.Getenv(noFenceEnv) == "")
	start := s.startNodes()
	cutAt, commitAt := s.cutAndRemove(start)
	s.healAndWait()
	s.audit(start, cutAt, commitAt)
}

// splitBrain is TestSplitBrainFenced's world: simweb, the PKI, an embedded
// etcd with RBAC, the three nodes' addresses with the proxies that cut
// node-2 off, and the node processes.
type splitBrain struct {
	t                        *testing.T
	fence                    bool
	web                      *simweb.Web
	srv                      *simweb.Server
	root, pki, caFile        string
	ids, addrs, logs         []string
	etcd                     *coord.Embedded
	op                       *coord.Store
	ctx                      context.Context
	in2, out20, out21, etcd2 *netcut.Proxy
	proxies                  []*netcut.Proxy
	nodes                    []*killtest.Child
}

// newSplitBrain starts simweb and etcd and writes the PKI and seeds;
// t.Cleanup stops them.
func newSplitBrain(t *testing.T, fence bool) *splitBrain {
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	root := t.TempDir()
	pki := filepath.Join(root, "pki")
	ids := []string{"node-0", "node-1", "node-2"}
	if err := tlsutil.WriteCluster(pki, ids, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := tlsutil.WriteOperator(pki, "admin", time.Hour); err != nil {
		t.Fatal(err)
	}
	ca, err := tlsutil.LoadCA(filepath.Join(pki, "ca.pem"), filepath.Join(pki, "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "seeds.txt"), []byte(strings.Join(web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	caFile := writeSimwebCA(t, srv, root)

	// The control plane: one embedded etcd member; RBAC with the nodes'
	// certificates as node users and "operator" as the operator.
	ec, ek, err := ca.Issue("etcd-0", []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := coord.StartEmbedded(coord.EmbedOptions{Dir: filepath.Join(root, "etcd"), CAPEM: ca.CertPEM, CertPEM: ec, KeyPEM: ek,
		ElectionMs: uint(splitElection.Milliseconds())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	oc, okey, err := ca.Issue("operator", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(oc, okey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	op, err := coord.Open(coord.Options{Endpoints: []string{etcd.ClientURL}, TLS: &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool}, TTL: splitTTL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { op.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)

	// Addresses: node-2 reaches its peers and etcd through proxies, and
	// its peers reach it through one.
	addrs := make([]string, len(ids))
	for i := range ids {
		addrs[i] = freeAddr(t)
	}
	mkProxy := func(target string) *netcut.Proxy {
		p, err := netcut.New(strings.TrimPrefix(target, "https://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	in2, out20, out21, etcd2 := mkProxy(addrs[2]), mkProxy(addrs[0]), mkProxy(addrs[1]), mkProxy(etcd.ClientURL)
	proxies := []*netcut.Proxy{in2, out20, out21, etcd2}
	v1 := hostsplit.View{Epoch: 1}
	for i, id := range ids {
		v1.Members = append(v1.Members, hostsplit.Member{ID: hostsplit.NodeID(id), Addr: addrs[i]})
	}
	if _, err := op.Init(ctx, v1); err != nil {
		t.Fatal(err)
	}
	if err := coord.SetupAuth(ctx, op.Client(), coord.Options{}, ids, []string{"operator", "admin"}); err != nil {
		t.Fatal(err)
	}

	return &splitBrain{t: t, fence: fence, web: web, srv: srv, root: root, pki: pki, caFile: caFile, ids: ids, addrs: addrs,
		etcd: etcd, op: op, ctx: ctx, in2: in2, out20: out20, out21: out21, etcd2: etcd2, proxies: proxies}
}

// config writes node i's config file and returns its path: node-2 reaches
// its peers and etcd through the proxies, its peers reach it through one.
func (s *splitBrain) config(i int) string {
	t, ids, addrs, web, srv, etcd, root, fence, caFile := s.t, s.ids, s.addrs, s.web, s.srv, s.etcd, s.root, s.fence, s.caFile
	out20, out21, etcd2, in2 := s.out20, s.out21, s.etcd2, s.in2
	// A politeness delay long enough for node-2 to have work left well
	// after the cut.
	minDelay, maxDelay := nodeconfig.Duration(150*time.Millisecond), nodeconfig.Duration(300*time.Millisecond)
	backoff, maxBackoff := nodeconfig.Duration(10*time.Millisecond), nodeconfig.Duration(100*time.Millisecond)
	fetchTimeout, dueFlush, ttl := nodeconfig.Duration(3*time.Second), nodeconfig.Duration(50*time.Millisecond), nodeconfig.Duration(splitTTL)
	election := nodeconfig.Duration(splitElection)
	factor := 2.0
	cert, key := tlsutil.NodeFiles("pki", ids[i])
	members := make([]nodeconfig.Member, len(ids))
	for j, id := range ids {
		members[j] = nodeconfig.Member{ID: id, Addr: addrs[j]}
	}
	endpoint := etcd.ClientURL
	if i == 2 {
		members[0].Addr, members[1].Addr, endpoint = out20.Addr(), out21.Addr(), "https://"+etcd2.Addr()
	} else {
		members[2].Addr = in2.Addr()
	}
	peer := 1024
	c := nodeconfig.Config{
		ID: ids[i], Members: members, DataDir: ids[i], Listen: addrs[i],
		TLS:           nodeconfig.TLS{CA: "pki/ca.pem", Cert: cert, Key: key},
		Workers:       8,
		PeerCacheSize: &peer,
		Politeness: nodeconfig.Politeness{MinDelay: &minDelay, MaxDelay: &maxDelay, Factor: &factor,
			FailureBackoff: &backoff, MaxFailureBackoff: &maxBackoff},
		FetchTimeout: &fetchTimeout, DUEFlush: &dueFlush, BodyCap: 1 << 20,
		AllowPrivate: true, Resolve: map[string]string{web.Domain(): srv.Addr()}, CAFile: caFile,
		Scope: "suffixes", Suffixes: []string{web.Domain()},
		SeedsFile: "seeds.txt", MetricsListen: "127.0.0.1:0",
		// The largest host's pages are fetched one per delay: a
		// smaller budget bounds the crawl's tail.
		MaxPagesPerHost: 200,
	}
	if fence {
		c.Etcd = &nodeconfig.Etcd{Endpoints: []string{endpoint}, TTL: &ttl, ElectionTimeout: &election}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, ids[i]+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startNodes starts the three nodes and waits until node-2 has fetched 100
// pages. start is when the nodes had been started.
func (s *splitBrain) startNodes() (start time.Time) {
	t, ids, ctx := s.t, s.ids, s.ctx
	s.logs, s.nodes = make([]string, len(ids)), make([]*killtest.Child, len(ids))
	for i, id := range ids {
		s.logs[i] = filepath.Join(s.root, id, "crawl.log")
		s.nodes[i] = startCLINode(t, "node", "--config", s.config(i), "--exit-when-done", "--status", "off")
	}
	start = time.Now()
	for logLines(s.logs[2]) < 100 {
		for i, nd := range s.nodes {
			select {
			case <-nd.Done():
				t.Fatalf("%s exited early (%v):\n%s", ids[i], nd.Err(), nd.Output())
			default:
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("no progress on node-2:\n%s", s.nodes[2].Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return start
}

// cutAndRemove cuts node-2 off and removes it as lost; it returns when the
// cut happened and when etcd's view turned to epoch 2.
func (s *splitBrain) cutAndRemove(start time.Time) (cutAt, commitAt time.Time) {
	t, ctx, op, pki, addrs, etcd := s.t, s.ctx, s.op, s.pki, s.addrs, s.etcd
	// Cut node-2 off from everything, then remove it as lost: the control
	// plane first (revoke, wait the TTL, commit epoch 2), then the
	// survivors' hand-off.
	for _, p := range s.proxies {
		p.SetCut(true)
	}
	cutAt = time.Now()
	t.Logf("cut node-2 off after %v (%d crawl-log lines on node-2)", cutAt.Sub(start).Round(time.Millisecond), logLines(s.logs[2]))
	// The command records the change in etcd as operator "admin" (its
	// certificate in pki): it revokes node-2's lease, waits out its TTL and
	// commits epoch 2 there before any survivor takes node-2's hosts.
	// When etcd's view turned to epoch 2 is watched from here.
	commitC := make(chan time.Time, 1)
	wctx, wcancel := context.WithCancel(ctx)
	go func() {
		for wctx.Err() == nil {
			if v, err := op.View(wctx); err == nil && v.Epoch >= 2 {
				commitC <- time.Now()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var out, errb syncBuf
	if code := run(ctx, []string{"cluster", "remove", "--pki", pki, "--peer", addrs[0], "--id", "node-2", "--lost", "--timeout", "1m",
		"--etcd", etcd.ClientURL}, &out, &errb); code != 0 {
		wcancel()
		t.Fatalf("cluster remove --lost: exit %d\n%s%s", code, out.String(), errb.String())
	}
	t.Logf("cluster remove --lost --etcd done %v after the cut", time.Since(cutAt).Round(time.Millisecond))
	select {
	case commitAt = <-commitC:
	case <-time.After(5 * time.Second):
		wcancel()
		t.Fatalf("etcd's view is not epoch 2 after the command:\n%s%s", out.String(), errb.String())
	}
	wcancel()
	t.Logf("etcd: epoch 2 committed %v after the cut", commitAt.Sub(cutAt).Round(time.Millisecond))
	if r, ok, err := op.Current(ctx); err != nil || !ok || r.Phase != handoff.PhaseDone || !slices.Equal(r.Lost, []hostsplit.NodeID{"node-2"}) {
		t.Fatalf("etcd's change record after the command: %+v ok=%v err=%v, want done with node-2 lost", r, ok, err)
	}
	return cutAt, commitAt
}

// healAndWait lets the survivors crawl node-2's hosts for a while, heals
// the links and waits for every node to exit.
func (s *splitBrain) healAndWait() {
	t, ctx, ids, nodes, fence := s.t, s.ctx, s.ids, s.nodes, s.fence
	time.Sleep(3 * time.Second)
	for _, p := range s.proxies {
		p.SetCut(false)
	}
	healAt := time.Now()
	select {
	case <-nodes[2].Done():
		if err := nodes[2].Err(); err != nil {
			t.Errorf("node-2: %v", err)
		}
		t.Logf("node-2 exited %v after the heal", time.Since(healAt).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		if fence {
			_ = nodes[2].Signal(syscall.SIGQUIT) // its goroutines, for the report
		} else {
			nodes[2].Kill()
		}
		<-nodes[2].Done()
		t.Errorf("node-2 did not exit after the heal (removed while cut off):\n%s", grepLines(nodes[2].Output(), "goroutine 1 "))
	}
	for i := range 2 {
		select {
		case <-nodes[i].Done():
			if err := nodes[i].Err(); err != nil {
				t.Errorf("%s: %v\n%s", ids[i], err, nodes[i].Output())
			}
		case <-ctx.Done():
			t.Fatalf("%s did not finish:\n%s", ids[i], nodes[i].Output())
		}
	}
	t.Logf("survivors finished %v after the heal", time.Since(healAt).Round(time.Millisecond))
	if !strings.Contains(nodes[2].Output(), "removed from the cluster (view epoch 2") {
		t.Errorf("node-2 does not report that it was removed at epoch 2:\n%s", grepLines(nodes[2].Output(), "node node-2"))
	}

}

// audit checks the crawl logs: requests node-2 made under its stale epoch
// after the commit (beyond those in flight), URLs fetched twice because of
// them, and requests of two nodes to one host less than 100 ms apart.
func (s *splitBrain) audit(start, cutAt, commitAt time.Time) {
	t, fence := s.t, s.fence
	var es []crawl.LogEntry
	for _, p := range s.logs {
		e, err := crawl.ReadLogFile(p)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e...)
	}
	stale := crawl.StaleFetches(es, []crawl.ViewCommit{{Epoch: 1, At: start}, {Epoch: 2, At: commitAt}}, time.Second)
	byOthers := map[string]bool{}
	for _, e := range es {
		if e.Node != "node-2" {
			byOthers[e.URL] = true
		}
	}
	twice := 0
	for _, e := range stale {
		if byOthers[e.URL] {
			twice++
		}
	}
	overlaps := hostOverlaps(es, 100*time.Millisecond)
	var last2 time.Time
	for _, e := range es {
		if e.Node == "node-2" && e.Time.After(last2) {
			last2 = e.Time
		}
	}
	t.Logf("node-2's last request ended %v after the cut (TTL %v); %d stale requests, %d URLs fetched twice because of them, %d pairs of requests to one host from two nodes < 100 ms apart",
		last2.Sub(cutAt).Round(time.Millisecond), splitTTL, len(stale), twice, overlaps)
	if len(stale) > 0 {
		t.Errorf("node-2 made %d requests under epoch 1 after epoch 2 was committed (e.g. %s at %v after the commit)",
			len(stale), stale[0].URL, stale[0].Time.Sub(commitAt).Round(time.Millisecond))
	}
	if twice > 0 {
		t.Errorf("%d URLs fetched twice beyond those in flight", twice)
	}
	if overlaps > 0 {
		t.Errorf("%d pairs of requests to one host from two nodes less than 100 ms apart", overlaps)
	}
	if fence && last2.Sub(cutAt) >= splitTTL {
		t.Errorf("node-2 fetched %v after the cut, its lease TTL is %v", last2.Sub(cutAt), splitTTL)
	}
}

// hostOverlaps counts pairs of crawl-log lines of different nodes on one
// host less than d apart.
func hostOverlaps(es []crawl.LogEntry, d time.Duration) int {
	byHost := map[string][]crawl.LogEntry{}
	for _, e := range es {
		if h, ok := hostsplit.Host(e.URL); ok {
			byHost[h] = append(byHost[h], e)
		}
	}
	n := 0
	for _, l := range byHost {
		slices.SortFunc(l, func(a, b crawl.LogEntry) int { return a.Time.Compare(b.Time) })
		for i := range l {
			for j := i + 1; j < len(l) && l[j].Time.Sub(l[i].Time) < d; j++ {
				if l[j].Node != l[i].Node {
					n++
				}
			}
		}
	}
	return n
}

// grepLines returns the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
