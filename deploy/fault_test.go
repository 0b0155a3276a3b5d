package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"github.com/sextant-crawler/sextant/simweb"
)

// faultWorkers is the workers per node in the fault test's config: the
// bound on URLs fetched twice per kill.
const faultWorkers = 8

// cluster is a docker cluster of simweb + 3 nodes made with plain docker
// commands (no compose tool needed), all names prefixed for cleanup.
type cluster struct {
	t      *testing.T
	prefix string
	image  string
	dir    string // PKI, config and seeds, bind-mounted read-only
	ids    []string
}

func (c *cluster) docker(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (c *cluster) must(args ...string) string {
	c.t.Helper()
	out, err := c.docker(args...)
	if err != nil {
		c.t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (c *cluster) name(id string) string { return c.prefix + "-" + id }
func (c *cluster) network() string       { return c.prefix + "-net" }

// webNet joins the nodes to simweb; network() joins the nodes to each other.
// A partition cuts a node off its peers, not off the web it crawls.
func (c *cluster) webNet() string { return c.prefix + "-web" }

func (c *cluster) runNode(id string) {
	c.t.Helper()
	// create, connect to the web, then start: the node looks simweb up
	// once at start.
	c.must("create", "--name", c.name(id), "--hostname", id, "--network", c.network(), "--network-alias", id,
		"-v", c.name(id)+":/data",
		"-v", filepath.Join(c.dir, "node.json")+":/etc/sextant/node.json:ro",
		"-v", filepath.Join(c.dir, "seeds.txt")+":/etc/sextant/seeds.txt:ro",
		"-v", filepath.Join(c.dir, "pki", id)+":/pki:ro", // its own key only
		"-v", c.name("ca")+":/ca:ro", // simweb's CA (ca_file)
		"-p", "127.0.0.1::9100",
		"--stop-timeout", "30",
		c.image, "node", "--config", "/etc/sextant/node.json", "--id", id)
	c.must("network", "connect", c.webNet(), c.name(id))
	c.must("start", c.name(id))
}

// metrics scrapes a node's /metrics through its published port; ok is
// false if the node is unreachable (down or cut off).
func (c *cluster) metrics(id string) (fams map[string]float64, ok bool) {
	port, err := c.docker("port", c.name(id), "9100/tcp")
	if err != nil || port == "" {
		return nil, false
	}
	addr := strings.Split(port, "\n")[0]
	cl := http.Client{Timeout: 3 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		c.t.Errorf("%s: /metrics does not parse: %v", id, err)
		return nil, false
	}
	out := map[string]float64{}
	for name, f := range mf {
		for _, m := range f.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out[name] += v
			for _, l := range m.GetLabel() {
				if l.GetName() == "peer" {
					out[name+"{peer="+l.GetValue()+"}"] += v // per-peer series too
				}
			}
		}
	}
	return out, true
}

func (c *cluster) totalFetches() float64 {
	var n float64
	for _, id := range c.ids {
		if m, ok := c.metrics(id); ok {
			n += m["sextant_fetches_total"]
		}
	}
	return n
}

func (c *cluster) terminated() bool {
	for _, id := range c.ids {
		m, ok := c.metrics(id)
		if !ok || m["sextant_crawl_terminated"] != 1 {
			return false
		}
	}
	return true
}

func (c *cluster) waitFor(what string, d time.Duration, cond func() bool) bool {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(time.Second)
	}
	c.t.Errorf("timed out after %v waiting for %s", d, what)
	return false
}

// TestFaults builds the image, brings up simweb and 3 nodes, and crawls
// simweb's small web while killing a node (SIGKILL) and restarting it,
// cutting one off the network for a while, and restarting every node one
// after another; then it checks the union of the crawl logs against the
// oracle, duplicates against the kill bound, and that every spool drained.
// It needs Docker: SEXTANT_DOCKER=1 runs it (with CI=true a missing Docker
// fails the test).
func TestFaults(t *testing.T) {
	if os.Getenv("SEXTANT_DOCKER") != "1" {
		t.Skip("set SEXTANT_DOCKER=1 to run the Docker fault suite")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("docker is missing but CI=true: the fault suite must run in CI")
		}
		t.Skip("docker is missing")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker info: %v\n%s", err, out)
		}
		t.Skipf("docker is not usable: %v", err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, prefix: fmt.Sprintf("sextant-ft-%d", os.Getpid()), ids: []string{"node-0", "node-1", "node-2"}}
	c.image = "sextant:" + c.prefix
	if out, err := exec.Command("bash", filepath.Join(repo, "deploy", "build.sh"), c.image).CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	c.dir = t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range append([]string{"simweb"}, c.ids...) {
				out, _ := c.docker("logs", "--tail", "20", c.name(id))
				t.Logf("--- logs of %s:\n%s", id, out)
			}
		}
		for _, id := range append([]string{"simweb"}, c.ids...) {
			c.docker("rm", "-f", "-v", c.name(id))
		}
		c.docker("network", "rm", c.network())
		c.docker("network", "rm", c.webNet())
		for _, id := range append([]string{"ca"}, c.ids...) {
			c.docker("volume", "rm", "-f", c.name(id))
		}
		c.docker("rmi", c.image)
	})
	writeFaultConfig(t, repo, c.dir, c.ids)

	c.must("network", "create", c.network())
	c.must("network", "create", c.webNet())
	for _, id := range c.ids {
		c.must("volume", "create", c.name(id))
	}
	// simweb serves most hosts over HTTPS: it writes its CA into a volume
	// the nodes mount, and a node reads it at start, so they wait for it.
	c.must("volume", "create", c.name("ca"))
	c.must("run", "-d", "--name", c.name("simweb"), "--network", c.webNet(), "--network-alias", "simweb",
		"-v", c.name("ca")+":/ca", c.image,
		"simweb", "--preset", "small", "--ca-out", "/ca/simweb-ca.pem", "--listen", "0.0.0.0:8080", "--allow-remote")
	if !c.waitFor("simweb's CA", time.Minute, func() bool {
		out, _ := c.docker("logs", c.name("simweb"))
		return strings.Contains(out, "CA certificate written to /ca/simweb-ca.pem")
	}) {
		return
	}
	for _, id := range c.ids {
		c.runNode(id)
	}
	start := time.Now()
	type event struct {
		what, node string
		at         time.Time
	}
	var events []event // kills and graceful restarts, in order
	logf := func(format string, args ...any) {
		t.Logf("%6.1fs "+format, append([]any{time.Since(start).Seconds()}, args...)...)
	}
	midCrawl := func(fault string) {
		if c.terminated() {
			t.Errorf("the crawl ended before the %s: slow the fault config down", fault)
		}
	}

	// 1. SIGKILL node-1 mid-crawl, start it again 5 s later.
	c.waitFor("300 fetches", 3*time.Minute, func() bool { return c.totalFetches() >= 300 })
	midCrawl("kill")
	logf("docker kill node-1 at %.0f fetches", c.totalFetches())
	events = append(events, event{"kill", "node-1", time.Now()})
	c.must("kill", c.name("node-1"))
	time.Sleep(5 * time.Second)
	c.must("start", c.name("node-1"))
	logf("node-1 started again")

	// 2. Cut node-2 off its peers for 10 s (it still reaches the web).
	c.waitFor("800 fetches", 3*time.Minute, func() bool { return c.totalFetches() >= 800 })
	midCrawl("partition")
	logf("disconnect node-2 at %.0f fetches", c.totalFetches())
	c.must("network", "disconnect", c.network(), c.name("node-2"))
	// While node-2 is cut off, what node-0 and node-1 find for it must wait
	// in their spools (nothing can be acknowledged): the cut is real and
	// the senders hold the URLs instead of dropping them.
	var heldForNode2 float64
	for cut := time.Now(); time.Since(cut) < 10*time.Second; time.Sleep(500 * time.Millisecond) {
		var held float64
		for _, id := range []string{"node-0", "node-1"} {
			if m, ok := c.metrics(id); ok {
				held += m["sextant_spool_urls{peer=node-2}"] + m["sextant_splitter_buffered_urls{peer=node-2}"]
			}
		}
		heldForNode2 = max(heldForNode2, held)
	}
	c.must("network", "connect", "--alias", "node-2", c.network(), c.name("node-2"))
	logf("node-2 reconnected; at most %.0f URLs for it were held by its peers during the cut", heldForNode2)
	if heldForNode2 == 0 {
		t.Errorf("no URL for node-2 was held by node-0 or node-1 during its 10 s partition: the cut did not take effect mid-crawl")
	}

	// 3. Rolling restart (SIGTERM, graceful), waiting for each node's
	// metrics before the next.
	midCrawl("rolling restart")
	for _, id := range c.ids {
		logf("restart %s", id)
		events = append(events, event{"graceful restart", id, time.Now()})
		c.must("restart", "-t", "30", c.name(id))
		c.waitFor(id+" up again", time.Minute, func() bool { _, ok := c.metrics(id); return ok })
	}

	if !c.waitFor("the cluster's termination", 5*time.Minute, c.terminated) {
		return
	}
	logf("cluster terminated")
	for _, id := range c.ids {
		m, _ := c.metrics(id)
		if m["sextant_spool_urls"] != 0 || m["sextant_spool_batches"] != 0 || m["sextant_splitter_buffered_urls"] != 0 {
			t.Errorf("%s: spool not drained: %v URLs, %v batches spooled, %v buffered", id,
				m["sextant_spool_urls"], m["sextant_spool_batches"], m["sextant_splitter_buffered_urls"])
		}
	}

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
	// Attribute each repeat to the last kill or restart of its node
	// before the second fetch: a kill may repeat up to the fetches in
	// flight (≤ workers); a graceful stop should repeat none.
	blame := map[int][]string{}
	for _, u := range dups {
		ts := times[u]
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		cause := -1
		for i, ev := range events {
			if ev.node == owner[u] && ev.at.Before(ts[len(ts)-1]) {
				cause = i
			}
		}
		blame[cause] = append(blame[cause], u)
	}
	for i, ev := range append(events, event{what: "no fault"}) {
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

// writeFaultConfig writes the PKI, the seeds and the shipped compose
// config slowed down (politeness) so that the faults land mid-crawl.
func writeFaultConfig(t *testing.T, repo, dir string, ids []string) {
	t.Helper()
	pki := filepath.Join(dir, "pki")
	if err := tlsutil.WriteCluster(pki, ids, []string{"localhost"}, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(pki, "ca-key.pem"))
	// As the compose cluster: one directory per node, mounted only into
	// that node, its key 0600 owned by the image's user (65532). Without
	// the privilege to chown, the material is made readable instead.
	uid := -1
	if os.Geteuid() == 0 {
		uid = 65532
	}
	if err := tlsutil.SplitPerNode(pki, ids, uid, uid); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, pki} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if uid < 0 {
		t.Log("not root: node keys made world-readable for the containers' user")
		for _, id := range ids {
			files, _ := filepath.Glob(filepath.Join(pki, id, "*.pem"))
			for _, f := range append(files, filepath.Join(pki, id)) {
				if err := os.Chmod(f, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(repo, "deploy", "compose", "node.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["workers"] = faultWorkers
	cfg["politeness"] = map[string]any{"min_delay": "100ms", "max_delay": "400ms", "factor": 10,
		"failure_backoff": "50ms", "max_failure_backoff": "1s"}
	out, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "node.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	seeds, err := os.ReadFile(filepath.Join(repo, "deploy", "compose", "seeds.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "seeds.txt"), seeds, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readLog parses a crawl log line by line: a node killed mid-write may
// leave one torn line, which is counted, not fatal.
func readLog(t *testing.T, path string) (entries []crawl.LogEntry, bad int) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r := bufio.NewReaderSize(fh, 1<<16)
	for {
		line, err := r.ReadString('\n')
		if line = strings.TrimRight(line, "\n"); line != "" {
			if e, perr := crawl.ParseLogLine(line); perr == nil {
				entries = append(entries, e)
			} else {
				bad++
			}
		}
		if err == io.EOF {
			return entries, bad
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// onWeb reports whether u is on one of the web's hosts. The resolver
// override sends every *.sim.test name to simweb, including the web's
// deliberately unresolvable link (nohost.sim.test) that real DNS would
// fail, so such URLs are left out of the oracle comparison.
func onWeb(web *simweb.Web, u string) bool {
	rest, ok := strings.CutPrefix(u, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(u, "https://")
	}
	if !ok {
		return false
	}
	host, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		if _, err := strconv.Atoi(host[i+1:]); err == nil {
			host = host[:i]
		}
	}
	_, ok = web.HostIndex(host)
	return ok
}
