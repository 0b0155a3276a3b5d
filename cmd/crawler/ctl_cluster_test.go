package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/control"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/killtest"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
	"github.com/sextant-crawler/sextant/simweb"
)

// ctlWeb is one simweb served for TestCtlCluster, with its oracle.
type ctlWeb struct {
	web    *simweb.Web
	srv    *simweb.Server
	oracle *simweb.OracleResult
}

// ctlCluster is TestCtlCluster's world: three webs (the crawl's, one
// reachable only from seeds injected mid-crawl, one blocked), three node
// processes and the operator's PKI.
type ctlCluster struct {
	t         *testing.T
	ctx       context.Context
	webs      [3]ctlWeb
	root, pki string
	members   []hostsplit.Member
	nodes     []*killtest.Child
	logs      []string
}

func newCtlWeb(t *testing.T, cfg simweb.Config) ctlWeb {
	web, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{BodyCap: 1 << 20, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	return ctlWeb{web: web, srv: srv, oracle: oracle}
}

func newCtlCluster(t *testing.T) *ctlCluster {
	c := &ctlCluster{t: t, root: t.TempDir()}
	c.webs[0] = newCtlWeb(t, simweb.SmallConfig())
	for i, d := range []string{"late.test", "blocked.test"} {
		cfg := simweb.SmallConfig()
		cfg.Domain, cfg.Seed, cfg.Hosts, cfg.PagesPerHost, cfg.MaxPagesPerHost = d, uint64(20+i), 4, 15, 30
		cfg.Shares = map[simweb.Pathology]float64{} // plain hosts
		c.webs[i+1] = newCtlWeb(t, cfg)
	}
	c.pki = filepath.Join(c.root, "pki")
	ids := []string{"node-0", "node-1", "node-2"}
	if err := tlsutil.WriteCluster(c.pki, ids, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := tlsutil.WriteOperator(c.pki, "admin", time.Hour); err != nil {
		t.Fatal(err)
	}
	var caPEM []byte
	resolve := map[string]string{}
	var domains []string
	for _, w := range c.webs {
		caPEM = append(caPEM, w.srv.CAPEM()...)
		resolve[w.web.Domain()] = w.srv.Addr()
		domains = append(domains, w.web.Domain())
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(c.root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("webs-ca.pem", caPEM)
	write("seeds.txt", []byte(strings.Join(c.webs[0].web.Seeds(), "\n")+"\n"))
	write("blocked-seeds.txt", []byte(strings.Join(c.webs[2].web.Seeds(), "\n")+"\n"))
	var members []nodeconfig.Member
	for _, id := range ids {
		m := hostsplit.Member{ID: hostsplit.NodeID(id), Addr: freeAddr(t)}
		c.members = append(c.members, m)
		members = append(members, nodeconfig.Member{ID: id, Addr: m.Addr})
		c.logs = append(c.logs, filepath.Join(c.root, id, "crawl.log"))
	}
	// Slow enough (30 ms at least between two fetches of a host) that the
	// crawl is still running at each step.
	minDelay, maxDelay, backoff, maxBackoff := nodeconfig.Duration(30*time.Millisecond), nodeconfig.Duration(100*time.Millisecond), nodeconfig.Duration(10*time.Millisecond), nodeconfig.Duration(100*time.Millisecond)
	fetchTimeout, dueFlush := nodeconfig.Duration(3*time.Second), nodeconfig.Duration(50*time.Millisecond)
	factor := 2.0
	for _, id := range ids {
		cert, key := tlsutil.NodeFiles("pki", id)
		cfg := nodeconfig.Config{
			ID: id, Members: members, DataDir: id,
			TLS: nodeconfig.TLS{CA: "pki/ca.pem", Cert: cert, Key: key}, Workers: 8,
			Politeness: nodeconfig.Politeness{MinDelay: &minDelay, MaxDelay: &maxDelay, Factor: &factor,
				FailureBackoff: &backoff, MaxFailureBackoff: &maxBackoff},
			FetchTimeout: &fetchTimeout, DUEFlush: &dueFlush, BodyCap: 1 << 20,
			AllowPrivate: true, Resolve: resolve, CAFile: "webs-ca.pem",
			Scope: "suffixes", Suffixes: domains, SeedsFile: "seeds.txt", MetricsListen: "127.0.0.1:0",
		}
		b, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		write(id+".json", b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	c.ctx, c.nodes = ctx, make([]*killtest.Child, len(ids))
	return c
}

func (c *ctlCluster) start() {
	for i, m := range c.members {
		args := []string{"node", "--config", filepath.Join(c.root, string(m.ID)+".json"), "--exit-when-done", "--status", "off"}
		// As startCLINode, with the child's test timeout as long as the
		// test's own (the machine may be loaded).
		c.nodes[i] = killtest.Start(c.t, killtest.Options{Run: "TestElasticCLIChild", Args: []string{"-test.timeout=10m"},
			Env: []string{cliChildEnv + "=" + strings.Join(args, "\n")}})
	}
}

func (c *ctlCluster) fetched() int {
	n := 0
	for _, p := range c.logs {
		n += logLines(p)
	}
	return n
}

func (c *ctlCluster) waitFetches(n int) {
	c.t.Helper()
	for c.fetched() < n {
		for i, nd := range c.nodes {
			select {
			case <-nd.Done():
				c.t.Fatalf("%s exited early (%v):\n%s", c.members[i].ID, nd.Err(), nd.Output())
			default:
			}
		}
		if c.ctx.Err() != nil {
			c.t.Fatalf("no progress: %d crawl-log lines, waiting for %d", c.fetched(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ctl runs `crawler ctl --pki PKI --peer ADDR ARGS...` in this process.
func (c *ctlCluster) ctl(args ...string) string {
	c.t.Helper()
	all := append([]string{"ctl", "--pki", c.pki, "--peer", c.members[0].Addr + "," + c.members[1].Addr}, args...)
	var out, errb syncBuf
	if code := run(c.ctx, all, &out, &errb); code != 0 {
		c.t.Fatalf("crawler %s: exit %d\n%s%s", strings.Join(all, " "), code, out.String(), errb.String())
	}
	c.t.Logf("crawler ctl %s:\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// statuses asks every node's Control status with the operator's
// certificate (an error while a node is still starting).
func (c *ctlCluster) statuses() ([]control.Status, error) {
	c.t.Helper()
	tn, err := loadIdentity(c.pki, "admin", false)
	if err != nil {
		c.t.Fatal(err)
	}
	var out []control.Status
	for _, r := range control.NewClient(tn).Each(c.ctx, c.members, func(ctx context.Context, cl pb.ControlClient) (*pb.ControlStatus, error) {
		return cl.Status(ctx, &pb.ControlStatusRequest{})
	}) {
		if r.Err != nil {
			return nil, fmt.Errorf("%s: %w", r.Member.ID, r.Err)
		}
		out = append(out, r.Status)
	}
	return out, nil
}

// requestsSince are the requests srv answered for host ("" any) that
// started at or after since (and before until, if not zero).
func requestsSince(srv *simweb.Server, host string, since, until time.Time) []string {
	var out []string
	for h, rs := range srv.Log() {
		if host != "" && h != host {
			continue
		}
		for _, r := range rs {
			if !r.Start.Before(since) && (until.IsZero() || r.Start.Before(until)) {
				out = append(out, h+r.Path+" at "+r.Start.Format("15:04:05.000"))
			}
		}
	}
	return out
}

// waitExit waits for every node process to exit 0.
func (c *ctlCluster) waitExit(why string) {
	c.t.Helper()
	for i, nd := range c.nodes {
		select {
		case <-nd.Done():
			if err := nd.Err(); err != nil {
				c.t.Fatalf("%s (%s): %v\n%s", c.members[i].ID, why, err, nd.Output())
			}
		case <-c.ctx.Done():
			c.t.Fatalf("%s did not exit (%s):\n%s", c.members[i].ID, why, nd.Output())
		}
	}
}

// busiestHost is the host of web with the most oracle URLs.
func busiestHost(o *simweb.OracleResult) string {
	n := map[string]int{}
	best := ""
	for _, u := range o.Fetched {
		p, err := url.Parse(u)
		if err != nil {
			continue
		}
		h := p.Hostname()
		if n[h]++; n[h] > n[best] {
			best = h
		}
	}
	return best
}

// Issue 28, "Done when" bullet 1: a running 3-node mTLS cluster on simweb
// driven through `crawler ctl`. A whole-cluster pause stops every request;
// seeds injected mid-crawl (a second web reachable only from them) are
// fetched exactly once, by their owners; a paused host gets no request
// while paused; a blocked domain (a third web, seeded too) gets none and
// its URLs stay queued and counted, across a drain and a restart; the
// drained cluster resumes exactly (every web's fetched set equals its
// oracle, no URL twice, every fetch by its host's owner); a member's
// certificate is refused by the Control service.
func TestCtlCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	c := newCtlCluster(t)
	mainWeb, late, blocked := c.webs[0], c.webs[1], c.webs[2]
	c.start()
	c.waitFetches(150)

	// A member's certificate is refused by the control API.
	tn, err := tlsutil.Load(filepath.Join(c.pki, "ca.pem"), filepath.Join(c.pki, "node-1.pem"), filepath.Join(c.pki, "node-1-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	res := control.NewClient(tn).Each(c.ctx, c.members[:1], func(ctx context.Context, cl pb.ControlClient) (*pb.ControlStatus, error) {
		return cl.Rule(ctx, &pb.ControlRuleRequest{Action: control.ActPause})
	})
	if st, _ := status.FromError(res[0].Err); st.Code() != codes.PermissionDenied {
		t.Fatalf("a member's certificate on Control: %v, want PermissionDenied", res[0].Err)
	}

	// The whole cluster paused: no request to any web.
	c.ctl("pause")
	paused := time.Now()
	c.ctl(append([]string{"seed"}, late.web.Seeds()...)...)
	c.ctl("block", "--domain", blocked.web.Domain())
	c.ctl("seed", "--file", filepath.Join(c.root, "blocked-seeds.txt"))
	c.ctl("set", "--host", mainWeb.web.HostName(1), "--delay", "50ms", "--max-pages", "100000")
	time.Sleep(time.Second)
	resumed := time.Now()
	for _, w := range c.webs {
		if rs := requestsSince(w.srv, "", paused, resumed); len(rs) > 0 {
			t.Errorf("%d requests while the cluster was paused, e.g. %v", len(rs), rs[:min(3, len(rs))])
		}
	}
	c.ctl("resume")

	// One host paused mid-crawl: no request to it until it is resumed.
	host := busiestHost(mainWeb.oracle)
	c.ctl("pause", "--host", host)
	hostPaused := time.Now()
	c.waitFetches(c.fetched() + 300)
	hostResumed := time.Now()
	if rs := requestsSince(mainWeb.srv, host, hostPaused, hostResumed); len(rs) > 0 {
		t.Errorf("%d requests to the paused host %s, e.g. %v", len(rs), host, rs[:min(3, len(rs))])
	}
	out := c.ctl("status")
	if !strings.Contains(out, "paused: host "+host) || !strings.Contains(out, "blocked: domain "+blocked.web.Domain()) {
		t.Errorf("status does not show the rules:\n%s", out)
	}
	c.ctl("resume", "--host", host)

	// Drain mid-crawl, then restart: the rules (the block) are kept.
	c.ctl("drain")
	c.waitExit("drained")
	for i, nd := range c.nodes {
		if strings.Contains(nd.Output(), "crawl has terminated") {
			t.Errorf("%s had finished before the drain: the drain was not mid-crawl", c.members[i].ID)
		}
	}
	before := c.fetched()
	c.start()
	// The restarted cluster crawls on (100 more fetches) with the block
	// restored, its URLs held.
	c.waitFetches(before + 100)
	var held int64
	deadline := time.Now().Add(5 * time.Minute)
	for {
		held = 0
		sts, err := c.statuses()
		if err != nil && time.Now().After(deadline) {
			t.Fatal(err)
		}
		for _, st := range sts {
			held += st.Metrics.HeldBlocked
			if len(st.Rules.Blocked) != 1 {
				t.Fatalf("%s after the restart: rules %+v, want the block", st.Node, st.Rules)
			}
		}
		if err == nil && held > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no URL held by the block after the restart: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if want := int64(len(blocked.web.Seeds())); held != want {
		t.Errorf("%d URLs held by the block, want the %d seeds of the blocked web", held, want)
	}
	if rs := requestsSince(blocked.srv, "", time.Time{}, time.Time{}); len(rs) > 0 {
		t.Errorf("%d requests to the blocked domain, e.g. %v", len(rs), rs[:min(3, len(rs))])
	}
	c.ctl("unblock", "--domain", blocked.web.Domain())
	c.waitExit("terminated")
	c.checkLogs(before)
}

// checkLogs: every web's fetched set equals its oracle, no URL twice, every
// fetch by the owner of its host.
func (c *ctlCluster) checkLogs(beforeRestart int) {
	t := c.t
	var es []crawl.LogEntry
	for _, p := range c.logs {
		e, err := crawl.ReadLogFile(p)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e...)
	}
	count := map[string]int{}
	for _, e := range es {
		if e.Outcome != crawl.OutcomeRobots {
			count[e.URL]++
		}
	}
	for u, n := range count {
		if n > 1 {
			t.Errorf("%s fetched %d times", u, n)
		}
	}
	for i, w := range c.webs {
		var got []string
		for u := range count {
			if onWeb(w.web, u) {
				got = append(got, u)
			}
		}
		if err := w.oracle.Check(got); err != nil {
			t.Errorf("web %d (%s): fetched set differs from the oracle (%d vs %d): %v", i, w.web.Domain(), len(got), w.oracle.Size(), err)
		}
	}
	foreign, err := crawl.ForeignFetches(es, hostsplit.View{Epoch: 1, Members: c.members})
	if err != nil {
		t.Error(err)
	}
	for _, e := range foreign[:min(5, len(foreign))] {
		t.Errorf("%s fetched %s without owning its host", e.Node, e.URL)
	}
	t.Logf("%d crawl-log lines (%d before the restart); oracles %d + %d + %d URLs",
		len(es), beforeRestart, c.webs[0].oracle.Size(), c.webs[1].oracle.Size(), c.webs[2].oracle.Size())
}
