package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/killtest"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"github.com/sextant-crawler/sextant/simweb"
)

// cliChildEnv holds the arguments (newline-separated) of a `crawler`
// command run by TestElasticCLIChild in a child process.
const cliChildEnv = "SEXTANT_CLI_CHILD_ARGS"

// TestElasticCLIChild runs the crawler command line in a child process of
// TestElasticCLIJoinLeave (the test binary stands in for the `crawler`
// binary) and exits with its status. It does nothing in a normal run.
func TestElasticCLIChild(t *testing.T) {
	args := os.Getenv(cliChildEnv)
	if args == "" {
		t.Skip("child of TestElasticCLIJoinLeave only")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, strings.Split(args, "\n"), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// startCLINode starts `crawler ARGS...` in a child process (the test
// binary as TestElasticCLIChild); t.Cleanup kills it.
func startCLINode(t *testing.T, args ...string) *killtest.Child {
	t.Helper()
	return killtest.Start(t, killtest.Options{Run: "TestElasticCLIChild", Env: []string{cliChildEnv + "=" + strings.Join(args, "\n")}})
}

// logLines counts the lines of a crawl log (0 if it does not exist yet).
func logLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte{'\n'})
}

var handoffLine = regexp.MustCompile(`handed over (\d+) hosts: (\d+) queued URLs, (\d+) fetched URLs \(seen-only\), (\d+) batches, (\d+) wire bytes`)

// Issue 10 acceptance, with separate processes and the real command line:
// two `crawler node` processes crawl simweb; mid-crawl a third starts
// (config "join": true) and `crawler cluster add` brings it in, then a
// fourth (some hosts move twice: their second hand-off passes on what the
// first owner fetched); later `crawler cluster remove` takes node-0 out
// gracefully. The union of the crawl logs equals the oracle's set (trap
// hosts included: the per-host budget moves with the host), no URL is
// fetched twice, every line was fetched by the owner of its host under the
// view of the line's epoch (a node never fetches a host it does not own),
// and each change moves about 1/N of the hosts.
func TestElasticCLIJoinLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	e := newElasticCLI(t)
	ids, all := e.ids, e.all
	startNode := func(i int) {
		e.nodes[i] = startCLINode(t, "node", "--config", e.config(i), "--exit-when-done", "--status", "off")
	}
	startNode(0)
	startNode(1)
	for _, i := range []int{2, 3} {
		e.waitFetches(e.fetchesNow() + 500)
		startNode(i)
		out := e.cli("cluster", "add", "--pki", e.pki, "--peer", all[0].Addr, "--id", ids[i], "--addr", all[i].Addr, "--timeout", "2m")
		if e.handedOver(out) == 0 {
			t.Errorf("the join of %s handed nothing over", ids[i])
		}
	}
	e.waitFetches(e.fetchesNow() + 500)
	out := e.cli("cluster", "remove", "--pki", e.pki, "--peer", all[1].Addr, "--id", "node-0", "--timeout", "2m")
	if e.handedOver(out) == 0 {
		t.Error("the leave handed nothing over")
	}
	for i, nd := range e.nodes {
		select {
		case <-nd.Done():
			if err := nd.Err(); err != nil {
				t.Errorf("%s: %v\n%s", ids[i], err, nd.Output())
			}
		case <-e.ctx.Done():
			t.Fatalf("%s did not finish:\n%s", ids[i], nd.Output())
		}
	}
	if !strings.Contains(e.nodes[0].Output(), "removed from the cluster") {
		t.Errorf("the removed node-0 did not stop as removed:\n%s", e.nodes[0].Output())
	}
	es, got, dups, perEpoch, foreign := e.checkLogs()
	checkHostMoves(t, e.web, e.views)
	t.Log(fmt.Sprintf("%d crawl-log lines by epoch %v; %d URLs fetched (oracle %d), %d twice, %d by a non-owner",
		len(es), perEpoch, len(got), e.oracle.Size(), len(dups), len(foreign)))
}

// elasticCLI is TestElasticCLIJoinLeave's world: simweb, PKI, seeds, the
// four members and their views, the node processes and their crawl logs.
type elasticCLI struct {
	t         *testing.T
	web       *simweb.Web
	srv       *simweb.Server
	oracle    *simweb.OracleResult
	root, pki string
	caFile    string
	ids       []string
	all       []hostsplit.Member
	members   []nodeconfig.Member
	views     []hostsplit.View
	logs      []string
	nodes     []*killtest.Child
	ctx       context.Context
}

func newElasticCLI(t *testing.T) *elasticCLI {
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{BodyCap: 1 << 20, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	pki := filepath.Join(root, "pki")
	ids := []string{"node-0", "node-1", "node-2", "node-3"}
	if err := tlsutil.WriteCluster(pki, ids, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := tlsutil.WriteOperator(pki, "admin", time.Hour); err != nil { // membership changes need an operator
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "seeds.txt"), []byte(strings.Join(web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	caFile := writeSimwebCA(t, srv, root)
	all := make([]hostsplit.Member, len(ids))
	var members []nodeconfig.Member
	for i, id := range ids {
		all[i] = hostsplit.Member{ID: hostsplit.NodeID(id), Addr: freeAddr(t)}
		members = append(members, nodeconfig.Member{ID: id, Addr: all[i].Addr})
	}
	views := []hostsplit.View{
		{Epoch: 1, Members: all[:2]},
		{Epoch: 2, Members: all[:3]},
		{Epoch: 3, Members: all},
		{Epoch: 4, Members: all[1:]},
	}
	e := &elasticCLI{t: t, web: web, srv: srv, oracle: oracle, root: root, pki: pki, caFile: caFile, ids: ids, all: all, members: members, views: views}
	e.logs = make([]string, len(ids))
	for i, id := range ids {
		e.logs[i] = filepath.Join(root, id, "crawl.log")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	e.ctx, e.nodes = ctx, make([]*killtest.Child, len(ids))
	return e
}

// config writes member i's config file and returns its path.
func (e *elasticCLI) config(i int) string {
	t, ids, members, web, srv := e.t, e.ids, e.members, e.web, e.srv
	zero, maxDelay, backoff, maxBackoff := nodeconfig.Duration(0), nodeconfig.Duration(50*time.Millisecond), nodeconfig.Duration(10*time.Millisecond), nodeconfig.Duration(100*time.Millisecond)
	fetchTimeout, dueFlush := nodeconfig.Duration(3*time.Second), nodeconfig.Duration(50*time.Millisecond)
	factor := 2.0
	cert, key := tlsutil.NodeFiles("pki", ids[i])
	peer := 1024
	c := nodeconfig.Config{
		ID: ids[i], Members: members[:2], DataDir: ids[i],
		TLS:           nodeconfig.TLS{CA: "pki/ca.pem", Cert: cert, Key: key},
		Workers:       8,
		PeerCacheSize: &peer,
		Politeness: nodeconfig.Politeness{MinDelay: &zero, MaxDelay: &maxDelay, Factor: &factor,
			FailureBackoff: &backoff, MaxFailureBackoff: &maxBackoff},
		FetchTimeout: &fetchTimeout, DUEFlush: &dueFlush, BodyCap: 1 << 20,
		AllowPrivate: true, Resolve: map[string]string{web.Domain(): srv.Addr()}, CAFile: e.caFile,
		Scope: "suffixes", Suffixes: []string{web.Domain()},
		SeedsFile: "seeds.txt", MetricsListen: "127.0.0.1:0",
	}
	if i >= 2 { // added to the running cluster: the new membership, joining
		c.Members, c.Join = members[:i+1], true
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.root, ids[i]+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (e *elasticCLI) fetchesNow() int {
	at := 0
	for _, p := range e.logs {
		at += logLines(p)
	}
	return at
}

// waitFetches waits until the crawl logs have n lines in all; a node that
// exits meanwhile fails the test.
func (e *elasticCLI) waitFetches(n int) {
	t := e.t
	t.Helper()
	for {
		total := e.fetchesNow()
		if total >= n {
			return
		}
		for i, nd := range e.nodes {
			if nd == nil {
				continue
			}
			select {
			case <-nd.Done():
				t.Fatalf("%s exited early (%v):\n%s", e.ids[i], nd.Err(), nd.Output())
			default:
			}
		}
		if e.ctx.Err() != nil {
			t.Fatalf("no progress: %d crawl-log lines, waiting for %d", total, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cli runs `crawler ARGS...` in this process and returns its stdout.
func (e *elasticCLI) cli(args ...string) string {
	t := e.t
	t.Helper()
	var out, errb syncBuf
	start := time.Now()
	if code := run(e.ctx, args, &out, &errb); code != 0 {
		t.Fatalf("crawler %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	}
	t.Logf("crawler %s (%v):\n%s", strings.Join(args[:2], " "), time.Since(start).Round(time.Millisecond), out.String())
	return out.String()
}

// handedOver is the number of URLs a change's output says it handed over.
func (e *elasticCLI) handedOver(out string) int {
	m := handoffLine.FindStringSubmatch(out)
	if m == nil {
		e.t.Fatalf("no hand-off line in:\n%s", out)
	}
	q, _ := strconv.Atoi(m[2])
	s, _ := strconv.Atoi(m[3])
	return q + s
}

// checkLogs checks the union of the crawl logs against the oracle (no URL
// twice) and that every line was fetched by the owner of its host under
// its epoch's view, with fetches under each view.
func (e *elasticCLI) checkLogs() (es []crawl.LogEntry, got, dups []string, perEpoch map[uint64]int, foreign []crawl.LogEntry) {
	t, web, oracle, views := e.t, e.web, e.oracle, e.views
	for _, p := range e.logs {
		e, err := crawl.ReadLogFile(p)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e...)
	}
	count := map[string]int{}
	perEpoch = map[uint64]int{}
	for _, e := range es {
		perEpoch[e.Epoch]++
		if e.Outcome != crawl.OutcomeRobots && onWeb(web, e.URL) {
			count[e.URL]++
		}
	}
	for u, c := range count {
		got = append(got, u)
		if c > 1 {
			dups = append(dups, u)
		}
	}
	sort.Strings(got)
	sort.Strings(dups)
	if len(dups) > 0 {
		t.Errorf("%d URLs fetched more than once, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	if err := oracle.Check(got); err != nil {
		t.Errorf("union of the crawl logs differs from the oracle (%d vs %d): %v", len(got), oracle.Size(), err)
	}
	// Every line by the owner of its host under its epoch's view, and the
	// crawl went on under each of the three views.
	foreign, err := crawl.ForeignFetches(es, views...)
	if err != nil {
		t.Error(err)
	}
	for _, e := range foreign[:min(10, len(foreign))] {
		t.Errorf("%s fetched %s under epoch %d without owning its host", e.Node, e.URL, e.Epoch)
	}
	for _, e := range []uint64{1, 2, 3, 4} {
		if perEpoch[e] == 0 {
			t.Errorf("no fetch under epoch %d: the change was not mid-crawl (%v)", e, perEpoch)
		}
	}
	return es, got, dups, perEpoch, foreign
}

// checkHostMoves: about 1/N of the hosts move at each change (N: the larger
// view).
func checkHostMoves(t *testing.T, web *simweb.Web, views []hostsplit.View) {
	moves := map[string]int{}
	for i := 1; i < len(views); i++ {
		ra, _ := hostsplit.NewRing(views[i-1].IDs(), false)
		rb, _ := hostsplit.NewRing(views[i].IDs(), false)
		moved := 0
		for _, h := range web.Hosts() {
			if ra.Owner(h) != rb.Owner(h) {
				moved++
				moves[h]++
			}
		}
		share := float64(moved) / float64(web.NumHosts())
		n := float64(max(len(views[i-1].Members), len(views[i].Members)))
		// 30 hosts are a small sample (±0.08 at N = 4): the share of
		// 10,000 host names is the ring's own.
		many := 0
		for j := range 10000 {
			h := fmt.Sprintf("host%d.example", j)
			if ra.Owner(h) != rb.Owner(h) {
				many++
			}
		}
		if share < 0.5/n || share > 1.75/n || float64(many)/1e4 < 0.8/n || float64(many)/1e4 > 1.2/n {
			t.Errorf("epoch %d→%d moved %.3f of the web's hosts and %.3f of 10,000 names, want about 1/%.0f", i, i+1, share, float64(many)/1e4, n)
		}
		t.Logf("epoch %d→%d: %d of %d hosts moved (%.3f; of 10,000 names %.3f; 1/N = %.3f)", i, i+1, moved, web.NumHosts(), share, float64(many)/1e4, 1/n)
	}
	twice := 0
	for _, n := range moves {
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d hosts changed owner more than once", twice)
}
