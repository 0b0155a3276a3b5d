package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/status"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"github.com/sextant-crawler/sextant/simweb"
)

// nodeCluster writes the PKI, seeds and one config per member (every
// member's Addr is a free loopback port) and returns the configs' paths.
func nodeCluster(t *testing.T, ids []string) (root string, paths []string, web *simweb.Web) {
	t.Helper()
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLog: true, NoLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	root = t.TempDir()
	if err := tlsutil.WriteCluster(filepath.Join(root, "pki"), ids, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "seeds.txt"), []byte(strings.Join(web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var members []nodeconfig.Member
	for _, id := range ids {
		members = append(members, nodeconfig.Member{ID: id, Addr: freeAddr(t)})
	}
	zero, maxDelay := nodeconfig.Duration(0), nodeconfig.Duration(50*time.Millisecond)
	for _, m := range members {
		cert, key := tlsutil.NodeFiles("pki", m.ID)
		c := nodeconfig.Config{
			ID: m.ID, Members: members, DataDir: m.ID,
			TLS:        nodeconfig.TLS{CA: "pki/ca.pem", Cert: cert, Key: key},
			Workers:    4,
			Politeness: nodeconfig.Politeness{MinDelay: &zero, MaxDelay: &maxDelay},
			BodyCap:    1 << 20, AllowPrivate: true, Resolve: map[string]string{web.Domain(): srv.Addr()},
			Scope: "suffixes", Suffixes: []string{web.Domain()},
			SeedsFile: "seeds.txt", MetricsListen: freeAddr(t),
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, m.ID+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return root, paths, web
}

// runNodeAsync runs `crawler node` from path until ctx ends; the returned
// channel yields its error, and out collects its stdout and stderr.
func runNodeAsync(t *testing.T, ctx context.Context, path, statusAddr string) (<-chan error, *syncBuf, *nodeconfig.Config) {
	t.Helper()
	cfg, err := nodeconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuf{}
	errc := make(chan error, 1)
	go func() { errc <- runNodeConfig(ctx, &cmdEnv{stdout: out, stderr: out}, cfg, false, statusAddr, "", nil) }()
	return errc, out, cfg
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A node whose peer refuses connections says so: one rate-limited log line
// naming the peer and the cause, the last error on /status, on the status
// page and as a metric.
func TestNodeReportsPeerFailures(t *testing.T) {
	ids := []string{"node-0", "node-1"}
	_, paths, _ := nodeCluster(t, ids)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	statusAddr := freeAddr(t)
	errc, out, cfg := runNodeAsync(t, ctx, paths[0], statusAddr) // node-1 never starts
	waitUntil(t, 30*time.Second, "the refused peer logged", func() bool {
		return strings.Contains(out.String(), "cannot reach peer")
	})
	// The member's address is on loopback: so is its gRPC port.
	if !strings.Contains(out.String(), "gRPC "+cfg.Members[0].Addr+" (mTLS)") {
		t.Errorf("gRPC not listening on the member's address %s:\n%s", cfg.Members[0].Addr, out)
	}
	var line string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "cannot reach peer") {
			line = l
			break
		}
	}
	for _, want := range []string{"node=node-0", "peer=node-1", "kind=refused", "connection refused"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line lacks %q: %s", want, line)
		}
	}
	fams := scrape(t, cfg.MetricsListen)
	if v, ok := sum(fams, "sextant_splitter_peer_last_error_timestamp_seconds", map[string]string{"peer": "node-1", "kind": "refused"}); !ok || v < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last-error metric %v %v", v, ok)
	}
	if v, ok := sum(fams, "sextant_splitter_peer_failing", map[string]string{"peer": "node-1"}); !ok || v != 1 {
		t.Errorf("failing metric %v %v", v, ok)
	}
	resp, err := http.Get("http://" + statusAddr + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var sj struct {
		Node status.Snapshot `json:"node"`
	}
	err = json.NewDecoder(resp.Body).Decode(&sj)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(sj.Node.Peers) != 1 || sj.Node.Peers[0].Up || sj.Node.Peers[0].LastErrorKind != "refused" ||
		!strings.Contains(sj.Node.Peers[0].LastError, "connection refused") || sj.Node.Peers[0].LastErrorAt.IsZero() {
		t.Errorf("status page peers: %+v", sj.Node.Peers)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("node: %v\n%s", err, out)
	}
	if n := strings.Count(out.String(), "cannot reach peer"); n != 1 {
		t.Errorf("%d log lines for one refused peer, want 1 (rate-limited):\n%s", n, out)
	}
}

// A graceful stop ends as soon as the node's work is drained, even while
// its peer keeps a batch stream open to it: it used to wait for the gRPC
// server's 5 s bound every time.
func TestNodeStopsPromptly(t *testing.T) {
	ids := []string{"node-0", "node-1"}
	_, paths, _ := nodeCluster(t, ids)
	ctx1, cancel1 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel1()
	errc1, _, _ := runNodeAsync(t, ctx1, paths[1], "off")
	ctx0, cancel0 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel0()
	errc0, out0, cfg0 := runNodeAsync(t, ctx0, paths[0], "off")
	// Wait until node-0 has received batches from node-1: node-1's
	// stream to it is open.
	waitUntil(t, 30*time.Second, "batches from node-1", func() bool {
		resp, err := http.Get("http://" + cfg0.MetricsListen + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		v, _ := sum(scrape(t, cfg0.MetricsListen), "sextant_splitter_urls_received_total", map[string]string{"peer": "node-1"})
		return v > 0
	})
	start := time.Now()
	cancel0() // SIGTERM
	err := <-errc0
	took := time.Since(start)
	if err != nil {
		t.Errorf("node-0: %v\n%s", err, out0)
	}
	if took >= 3*time.Second {
		t.Errorf("node-0 took %v to stop gracefully with node-1 up, want < 3s (the 5 s is a bound)\n%s", took, out0)
	}
	t.Logf("node-0 stopped in %v", took)
	cancel1()
	if err := <-errc1; err != nil {
		t.Errorf("node-1: %v", err)
	}
}

func TestNodeListenFlag(t *testing.T) {
	_, paths, _ := nodeCluster(t, []string{"node-0"})
	var out, errb syncBuf
	if code := run(context.Background(), []string{"node", "--config", paths[0], "--listen", "nonsense"}, &out, &errb); code != 2 {
		t.Errorf("--listen nonsense: exit %d, want 2: %s", code, errb.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := freeAddr(t)
	done := make(chan int, 1)
	var o2 syncBuf
	go func() {
		done <- run(ctx, []string{"node", "--config", paths[0], "--listen", addr, "--status", "off"}, &o2, &o2)
	}()
	waitUntil(t, 30*time.Second, "the node to start", func() bool { return strings.Contains(o2.String(), "gRPC ") })
	if !strings.Contains(o2.String(), "gRPC "+addr+" (mTLS)") {
		t.Errorf("--listen %s not used:\n%s", addr, o2.String())
	}
	cancel()
	<-done
}
