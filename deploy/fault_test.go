package deploy

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	etcds  []string // etcd members, on network() with the nodes
	start  time.Time
	events []faultEvent // kills and graceful restarts, in order
}

// faultEvent is a kill or graceful restart of a node (blameRepeat says
// which repeated fetches are its). at is taken before the docker command
// that stops the node and end after it returns: lines the node logs in
// between may still be lost by the stop.
type faultEvent struct {
	what, node string
	at, end    time.Time
}

func (c *cluster) logf(format string, args ...any) {
	c.t.Logf("%6.1fs "+format, append([]any{time.Since(c.start).Seconds()}, args...)...)
}

// midCrawl fails the test if the crawl ended before a fault.
func (c *cluster) midCrawl(fault string) {
	if c.terminated() {
		c.t.Errorf("the crawl ended before the %s: slow the fault config down", fault)
	}
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

// writeFaultConfig writes the PKI, the seeds and the shipped compose
// config slowed down (politeness) so that the faults land mid-crawl.
func writeFaultConfig(t *testing.T, repo, dir string, nodeIDs, etcds []string) {
	t.Helper()
	pki := filepath.Join(dir, "pki")
	ids := append(append([]string{}, nodeIDs...), etcds...)
	if err := tlsutil.WriteCluster(pki, ids, []string{"localhost"}, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	// The operator identity for `crawler cluster` (the failed add), kept
	// in pki/ with ca.pem: only the operator's container mounts that.
	if err := tlsutil.WriteOperator(pki, "admin", 24*time.Hour); err != nil {
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
