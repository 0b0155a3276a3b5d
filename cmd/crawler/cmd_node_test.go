package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/report"
	"github.com/sextant-crawler/sextant/internal/status"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"github.com/sextant-crawler/sextant/simweb"
)

// syncBuf is a goroutine-safe output buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// onWeb reports whether u is on one of the web's hosts. A resolver
// override for the web's domain sends every sub-domain to simweb, including
// the web's deliberately unresolvable link (nohost.sim.test) that real DNS
// would fail, so such URLs are left out of the oracle comparison.
func onWeb(web *simweb.Web, u string) bool {
	rest, ok := strings.CutPrefix(u, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(u, "https://")
	}
	if !ok {
		return false
	}
	host, _, _ := strings.Cut(rest, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	_, ok = web.HostIndex(host)
	return ok
}

func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse as Prometheus text: %v", err)
	}
	return fams
}

// sum adds the values of family name whose labels include want.
func sum(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	var total float64
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total, true
}

// TestNodeClusterMetrics runs a two-node cluster of `crawler node` (real
// gRPC over mTLS, config files on disk) against simweb, waits for the
// cluster's crawl to terminate, scrapes both nodes' /metrics, parses them
// with the Prometheus text parser and checks them against the crawl logs;
// the union of the logs must equal the oracle's set. Then SIGTERM (context
// cancellation) must stop both nodes cleanly.
func TestNodeClusterMetrics(t *testing.T) {
	c := startNodeCluster(t)
	c.waitTerminated(t)
	for i := range c.ids {
		checkPromtool(t, c.metricsAddr[i]) // metrics_promtool_test.go
	}
	c.checkStatusPages(t)
	count, logs := c.checkMetrics(t)
	var got, dups []string
	for u, c := range count {
		got = append(got, u)
		if c > 1 {
			dups = append(dups, u)
		}
	}
	sort.Strings(got)
	if len(dups) > 0 {
		t.Errorf("%d URLs fetched twice, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	if err := c.oracle.Check(got); err != nil {
		t.Errorf("union of the nodes' crawl logs differs from the oracle (%d vs %d): %v", len(got), c.oracle.Size(), err)
	}
	c.cancel() // SIGTERM
	c.wg.Wait()
	c.checkReports(t, logs)
}

// metricsCluster is two `crawler node`s run by runNodeConfig in goroutines
// against simweb, with their outputs and addresses.
type metricsCluster struct {
	web                     *simweb.Web
	oracle                  *simweb.OracleResult
	root                    string
	ids                     []string
	ctx                     context.Context
	cancel                  context.CancelFunc
	wg                      sync.WaitGroup
	errs                    []error
	outs                    []*syncBuf
	metricsAddr, statusAddr []string
}

// startNodeCluster writes the PKI, seeds and config files and starts the
// nodes; t.Cleanup stops them.
func startNodeCluster(t *testing.T) *metricsCluster {
	c := &metricsCluster{}
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLog: true, NoLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{BodyCap: 1 << 20, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	ids := []string{"node-0", "node-1"}
	if err := tlsutil.WriteCluster(filepath.Join(root, "pki"), ids, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "seeds.txt"), []byte("# simweb seeds\n"+strings.Join(web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	caFile := writeSimwebCA(t, srv, root)
	var members []nodeconfig.Member
	for _, id := range ids {
		members = append(members, nodeconfig.Member{ID: id, Addr: freeAddr(t)})
	}
	zero, maxDelay, backoff, maxBackoff := nodeconfig.Duration(0), nodeconfig.Duration(200*time.Millisecond), nodeconfig.Duration(10*time.Millisecond), nodeconfig.Duration(100*time.Millisecond)
	fetchTimeout, dueFlush := nodeconfig.Duration(3*time.Second), nodeconfig.Duration(50*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	c.web, c.oracle, c.root, c.ids, c.ctx, c.cancel = web, oracle, root, ids, ctx, cancel
	c.errs, c.outs, c.metricsAddr = make([]error, len(ids)), make([]*syncBuf, len(ids)), make([]string, len(ids))
	c.statusAddr = []string{freeAddr(t), freeAddr(t)}
	t.Cleanup(func() { cancel(); c.wg.Wait() })
	for i, id := range ids {
		cert, key := tlsutil.NodeFiles("pki", id)
		cpw, peer := 64, 1024
		nc := nodeconfig.Config{
			ID: id, Listen: members[i].Addr, Members: members,
			DataDir: id, TLS: nodeconfig.TLS{CA: "pki/ca.pem", Cert: cert, Key: key},
			Workers: 8, CachePerWorker: &cpw, PeerCacheSize: &peer,
			Politeness: nodeconfig.Politeness{MinDelay: &zero, MaxDelay: &maxDelay,
				FailureBackoff: &backoff, MaxFailureBackoff: &maxBackoff},
			FetchTimeout: &fetchTimeout, DUEFlush: &dueFlush, BodyCap: 1 << 20,
			AllowPrivate: true, Resolve: map[string]string{web.Domain(): srv.Addr()}, CAFile: caFile,
			Scope: "suffixes", Suffixes: []string{web.Domain()},
			SeedsFile: "seeds.txt", MetricsListen: freeAddr(t),
		}
		c.metricsAddr[i] = nc.MetricsListen
		b, err := json.MarshalIndent(nc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(root, id+".json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c.outs[i] = &syncBuf{}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			// A progress line every 20 ms: the test checks the node logs some.
			env := &cmdEnv{stdout: c.outs[i], stderr: c.outs[i], progress: 20 * time.Millisecond}
			cfg, err := nodeconfig.Load(path)
			if err != nil {
				c.errs[i] = err
				return
			}
			c.errs[i] = runNodeConfig(ctx, env, cfg, false, c.statusAddr[i], filepath.Join(root, id+"-report.json"), nil)
		}()
	}
	return c
}

// waitTerminated waits until both nodes report the cluster's termination
// on /metrics.
func (c *metricsCluster) waitTerminated(t *testing.T) {
	ids, outs, metricsAddr, ctx := c.ids, c.outs, c.metricsAddr, c.ctx
	for i := range ids {
		for {
			if ctx.Err() != nil {
				t.Fatalf("%s: no termination before the deadline; output:\n%s", ids[i], outs[i])
			}
			resp, err := http.Get("http://" + metricsAddr[i] + "/metrics")
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if strings.Contains(string(b), fmt.Sprintf("sextant_crawl_terminated{node=%q} 1", ids[i])) {
					break
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// checkStatusPages: each node's status page shows its live curves and
// busiest hosts, and the other node as asked over the NodeStatus gRPC
// service (mTLS).
func (c *metricsCluster) checkStatusPages(t *testing.T) {
	ids, statusAddr := c.ids, c.statusAddr
	for i, id := range ids {
		resp, err := http.Get("http://" + statusAddr[i] + "/status.json?cluster=1")
		if err != nil {
			t.Fatal(err)
		}
		var sj struct {
			Node    status.Snapshot   `json:"node"`
			Cluster []status.Snapshot `json:"cluster"`
		}
		err = json.NewDecoder(resp.Body).Decode(&sj)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s status.json: %v", id, err)
		}
		if sj.Node.Node != id || len(sj.Node.Caches) != 2 || len(sj.Node.Caches[0].Curves["clock"]) == 0 ||
			len(sj.Node.Caches[1].Curves["lru"]) == 0 || sj.Node.Caches[0].Advice == nil || len(sj.Node.Busiest) == 0 {
			t.Errorf("%s status: %+v", id, sj.Node)
		}
		if len(sj.Cluster) != 2 || sj.Cluster[1].Node != ids[1-i] || sj.Cluster[1].Error != "" || sj.Cluster[1].Pages == 0 {
			t.Errorf("%s cluster view: %+v", id, sj.Cluster)
		}
	}
}

// checkMetrics scrapes both nodes' /metrics and checks them against their
// crawl logs. It returns how often each URL on the web was fetched and the
// logs.
func (c *metricsCluster) checkMetrics(t *testing.T) (map[string]int, map[string][]crawl.LogEntry) {
	ids, metricsAddr, root, web := c.ids, c.metricsAddr, c.root, c.web
	count := map[string]int{}
	logs := map[string][]crawl.LogEntry{}
	for i, id := range ids {
		fams := scrape(t, metricsAddr[i])
		es, err := crawl.ReadLogFile(filepath.Join(root, id, "crawl.log"))
		if err != nil {
			t.Fatal(err)
		}
		logs[id] = es
		var pages int
		for _, e := range es {
			if e.Outcome == crawl.OutcomeRobots {
				continue
			}
			pages++
			if onWeb(web, e.URL) {
				count[e.URL]++
			}
		}
		var fetched float64
		for _, oc := range []string{"ok", "redirect", "http_error", "error"} {
			v, ok := sum(fams, "sextant_fetches_total", map[string]string{"node": id, "outcome": oc})
			if !ok {
				t.Fatalf("%s: no sextant_fetches_total", id)
			}
			fetched += v
		}
		robots, _ := sum(fams, "sextant_robots_disallowed_total", map[string]string{"node": id})
		if fetched+robots != float64(len(es)) && fetched != float64(pages) {
			t.Errorf("%s: sextant_fetches_total sums to %v (+%v robots-disallowed) but crawl.log has %d lines (%d fetches)", id, fetched, robots, len(es), pages)
		}
		if fetched == 0 {
			t.Errorf("%s fetched nothing", id)
		}
		peer := ids[1-i]
		disc, ok1 := sum(fams, "sextant_splitter_urls_discovered_total", map[string]string{"peer": peer})
		supp, ok2 := sum(fams, "sextant_splitter_urls_suppressed_total", map[string]string{"peer": peer})
		sent, ok3 := sum(fams, "sextant_splitter_urls_sent_total", map[string]string{"peer": peer})
		if !ok1 || !ok2 || !ok3 || disc == 0 || sent == 0 || sent > disc-supp {
			t.Errorf("%s: splitter metrics for peer %s: discovered %v suppressed %v sent %v", id, peer, disc, supp, sent)
		}
		if v, _ := sum(fams, "sextant_spool_urls", nil); v != 0 {
			t.Errorf("%s: spool not drained at termination: %v URLs", id, v)
		}
		if v, _ := sum(fams, "sextant_frontier_urls", nil); v != 0 {
			t.Errorf("%s: frontier not empty at termination: %v", id, v)
		}
		for _, name := range []string{"sextant_fetched_bytes_total", "sextant_due_entries", "sextant_due_merges_total",
			"sextant_cache_hits_total", "sextant_cache_misses_total", "sextant_wire_bytes_total", "sextant_politeness_waits_total"} {
			if _, ok := fams[name]; !ok {
				t.Errorf("%s: metric %s missing", id, name)
			}
		}
		if v, _ := sum(fams, "sextant_cache_hits_total", map[string]string{"cache": "front"}); v == 0 {
			t.Errorf("%s: front cache never hit", id)
		}
		for _, path := range []string{"/healthz", "/status"} {
			resp, err := http.Get("http://" + metricsAddr[i] + path)
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("%s %s: %v %v", id, path, err, resp)
			} else {
				resp.Body.Close()
			}
		}
	}
	return count, logs
}

// checkReports checks the nodes' exit, summary, progress lines and final
// reports (text and JSON) after SIGTERM.
func (c *metricsCluster) checkReports(t *testing.T, logs map[string][]crawl.LogEntry) {
	ids, outs, root := c.ids, c.outs, c.root
	for i, err := range c.errs {
		if err != nil {
			t.Errorf("%s: %v\n%s", ids[i], err, outs[i])
		}
		if !strings.Contains(outs[i].String(), "crawl has terminated") {
			t.Errorf("%s printed no final summary:\n%s", ids[i], outs[i])
		}
		if o := outs[i].String(); !strings.Contains(o, "msg=progress") || !strings.Contains(o, "node="+ids[i]+" fetched=") || !strings.Contains(o, "peers=1") {
			t.Errorf("%s logged no progress line:\n%s", ids[i], o)
		}
		// The final report, text and JSON, agrees with the crawl log.
		for _, want := range []string{"Sextant node report: node " + ids[i], "cross-machine   traffic reduced by",
			"disk bytes per URL", "cache advice    " + ids[i] + " front", ids[i] + " per-peer (cross-machine)"} {
			if !strings.Contains(outs[i].String(), want) {
				t.Errorf("%s: report lacks %q:\n%s", ids[i], want, outs[i])
			}
		}
		rep := readReport(t, filepath.Join(root, ids[i]+"-report.json"))
		checkReport(t, rep, "node", logs[ids[i]])
		// A first run: no "resumed:", and the data dir's totals count its log.
		tot, err := report.StartRun(filepath.Join(root, ids[i]), time.Now()) // as a second run would
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(outs[i].String(), "resumed:") || tot.Runs != 2 || !tot.Resumed || tot.Fetches != uint64(fetchLines(t, filepath.Join(root, ids[i]))) {
			t.Errorf("%s: totals after one run %+v; crawl.log has %d fetch lines\n%s", ids[i], tot, fetchLines(t, filepath.Join(root, ids[i])), outs[i])
		}
		n := rep["per_node"].([]any)[0].(map[string]any)
		for _, k := range []string{"peer_cache_advice", "wire_bytes_per_cross_url", "cross_machine_traffic_reduction", "remote_sent"} {
			if _, ok := n[k]; !ok {
				t.Errorf("%s: JSON report per_node lacks %q", ids[i], k)
			}
		}
		if v := n["wire_bytes_per_cross_url"].(float64); v <= 0 {
			t.Errorf("%s: wire bytes per cross URL %v", ids[i], v)
		}
		if v := n["cross_machine_traffic_reduction"].(float64); v <= 0 || v >= 1 {
			t.Errorf("%s: traffic reduction %v", ids[i], v)
		}
	}
}

func TestNodeBadConfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"id":"a","members":[{"id":"b","addr":"x:1"}],"workerz":3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	incomplete := filepath.Join(dir, "incomplete.json")
	if err := os.WriteFile(incomplete, []byte(`{"id":"a","members":[{"id":"b","addr":"x:1"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"node"},
		{"node", "--config", bad},
		{"node", "--config", incomplete},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2; stderr %s", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	run(context.Background(), []string{"node", "--config", incomplete}, &out, &errb)
	for _, want := range []string{"not in members", "data_dir is required", "tls"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("error for an incomplete config lacks %q: %s", want, errb.String())
		}
	}
	var o2, e2 bytes.Buffer
	if code := run(context.Background(), []string{"node", "--config", filepath.Join(dir, "missing.json")}, &o2, &e2); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}
