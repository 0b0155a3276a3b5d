package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// composeNodes are compose.yaml's nodes; node-i's status page is published
// on 127.0.0.1:1808i (status_listen in compose/node.json).
var composeNodes = []string{"node-0", "node-1", "node-2"}

// TestComposeStatusPage brings up compose.yaml (simweb and three nodes, the
// image and each node's PKI swapped in by an override file) and opens
// node-0's published status page from the host in headless Chromium: the
// cluster view, asked over the peers' mTLS gRPC port with compose service
// names as addresses, shows every node healthy. Each page is read-only.
func TestComposeStatusPage(t *testing.T) {
	requireDocker(t)
	dc, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose is missing (the machine's Docker ships it): %v", err)
	}
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
		}
	}
	if browser == "" {
		t.Fatal("chromium is missing (.ci/run installs Debian's chromium)")
	}
	repo := repoRoot(t)
	pid := os.Getpid()
	tag, project, dir := fmt.Sprintf("sextant:csp-%d", pid), fmt.Sprintf("sextant-csp-%d", pid), t.TempDir()
	run(t, nil, "bash", filepath.Join(repo, "deploy", "build.sh"), tag)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", tag).Run() })
	// As up.sh: one PKI directory per node and per etcd member, owned by
	// the image's user.
	run(t, nil, "docker", "run", "--rm", "--user", "0:0", "-v", dir+"/pki:/out", tag,
		"certs", "--nodes", "3", "--etcd", "3", "--out", "/out", "--hosts", "localhost", "--per-node", "--owner", "65532:65532")
	override := "services:\n  simweb:\n    image: " + tag + "\n"
	for _, id := range append(slices.Clone(composeNodes), "etcd-0", "etcd-1", "etcd-2") {
		override += fmt.Sprintf("  %s:\n    image: %s\n    volumes: [\"%s/pki/%s:/pki:ro\"]\n", id, tag, dir, id)
	}
	if err := os.WriteFile(filepath.Join(dir, "override.yaml"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	compose := func(args ...string) (string, error) {
		base := []string{"-p", project, "-f", filepath.Join(repo, "deploy", "compose.yaml"), "-f", filepath.Join(dir, "override.yaml")}
		out, err := exec.Command(dc, append(base, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := compose("logs", "--tail", "30")
			t.Logf("compose logs:\n%s", out)
		}
		if out, err := compose("down", "-v", "--timeout", "10"); err != nil {
			t.Logf("compose down: %v\n%s", err, out)
		}
	})
	if out, err := compose("up", "-d"); err != nil {
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	waitClusterHealthy(t, 4*time.Minute)
	checkStatusReadOnly(t)

	// The cluster was healthy a moment ago (waitClusterHealthy); a render
	// may still catch a node between two of its peers' probes, so a few
	// renders are allowed, each failure logged with the rows it showed.
	var bad []string
	for attempt := range 3 {
		if attempt > 0 {
			t.Logf("render %d: not every node healthy: %q", attempt, bad)
			time.Sleep(5 * time.Second)
		}
		if bad = unhealthyRows(chromiumDOM(t, browser, "http://127.0.0.1:18080/")); len(bad) == 0 {
			return
		}
	}
	t.Errorf("the cluster view rendered in Chromium does not show every node healthy (state ok, peers 2/2): %q", bad)
}

// clusterRow is a node's row of the cluster view's table.
var clusterRow = regexp.MustCompile(`<tr><td>node-[0-9]+</td>.*?</tr>`)

// unhealthyRows returns the rows of the rendered cluster view for the
// compose nodes that are not ok with both peers up ("missing: ID" when a
// node has no row; the page's start when there is no row at all).
func unhealthyRows(dom []byte) []string {
	rows := clusterRow.FindAll(dom, -1)
	if len(rows) == 0 {
		return []string{fmt.Sprintf("no cluster table in %.2000s", dom)}
	}
	var bad []string
	for _, id := range composeNodes {
		row := regexp.MustCompile(`<tr><td>` + id + `</td><td>ok</td>(?:<td>[^<]*</td>){5}<td>2/2</td></tr>`)
		if row.Match(dom) {
			continue
		}
		found := "missing: " + id
		for _, r := range rows {
			if bytes.HasPrefix(r, []byte("<tr><td>"+id+"</td>")) {
				found = string(r)
			}
		}
		bad = append(bad, found)
	}
	return bad
}

// clusterView is what status.json?cluster=1 says of each node.
type clusterView struct {
	Node    struct{ Node string } `json:"node"`
	Cluster []struct {
		Node   string `json:"node"`
		Error  string `json:"error"`
		Fenced string `json:"fenced"`
		Peers  []struct {
			ID string `json:"id"`
			Up bool   `json:"up"`
		} `json:"peers"`
	} `json:"cluster"`
}

// healthy reports whether every compose node answers, unfenced, with both
// peers up; why says what is not.
func (v clusterView) healthy() (ok bool, why string) {
	if len(v.Cluster) != len(composeNodes) {
		return false, fmt.Sprintf("%d nodes in the cluster view", len(v.Cluster))
	}
	for _, n := range v.Cluster {
		up := 0
		for _, p := range n.Peers {
			if p.Up {
				up++
			}
		}
		if n.Error != "" || n.Fenced != "" || up != len(composeNodes)-1 {
			return false, fmt.Sprintf("%s: error %q fenced %q peers up %d", n.Node, n.Error, n.Fenced, up)
		}
	}
	return true, ""
}

// waitClusterHealthy polls every node's published status page until each
// one's cluster view shows all three nodes healthy.
func waitClusterHealthy(t *testing.T, d time.Duration) {
	t.Helper()
	cl := http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(d)
	for i, id := range composeNodes {
		url := fmt.Sprintf("http://127.0.0.1:%d/status.json?cluster=1", 18080+i)
		why := ""
		for {
			if time.Now().After(deadline) {
				t.Fatalf("%s (%s): the cluster view is not healthy after %v: %s", id, url, d, why)
			}
			var v clusterView
			resp, err := cl.Get(url)
			if err == nil {
				err = json.NewDecoder(resp.Body).Decode(&v)
				resp.Body.Close()
			}
			var ok bool
			if err != nil {
				why = err.Error()
			} else if v.Node.Node != id {
				why = fmt.Sprintf("the page of %q is published where %s's should be", v.Node.Node, id)
			} else if ok, why = v.healthy(); ok {
				break
			}
			time.Sleep(2 * time.Second)
		}
	}
}

// checkStatusReadOnly: the published page refuses anything but GET/HEAD.
func checkStatusReadOnly(t *testing.T) {
	t.Helper()
	for _, path := range []string{"/", "/status.json"} {
		resp, err := http.Post("http://127.0.0.1:18080"+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %s, want 405", path, resp.Status)
		}
	}
}

// chromiumDOM loads url in headless Chromium and returns the DOM after its
// scripts have polled status.json.
func chromiumDOM(t *testing.T, bin, url string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=8000", "--dump-dom", url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	return out
}
