package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/promtext"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
)

var clusterIDs = []string{"node-0", "node-1", "node-2"}

// clusterNode is one node's configuration file and its listen addresses.
type clusterNode struct {
	id, config, metrics, status string
}

// runCluster runs three `crawler node` processes (real gRPC over mTLS on
// loopback) against the shared simweb, waits until every node reports the
// cluster's termination on /metrics, scrapes the nodes' metrics and stops
// them with SIGTERM. The nodes' ports are picked free (freeAddr) but only
// bound when each node starts; in between another socket, such as a node's
// outgoing connection, may take one. A run lost that way is run again with
// fresh ports, up to three times.
func runCluster(ctx context.Context, o options, e *env, rep int) (r result) {
	for attempt := 1; ; attempt++ {
		r = runClusterOnce(ctx, o, e, rep)
		if attempt == 3 || !strings.Contains(r.Err, "address already in use") {
			return r
		}
		head, _, _ := strings.Cut(r.Err, "\n")
		logf("cluster: a node lost its port before binding it, run again with fresh ports (%s)", head)
	}
}

// runClusterOnce is one run of the cluster on fresh ports.
func runClusterOnce(ctx context.Context, o options, e *env, rep int) (r result) {
	dir, err := runDir(o, "cluster", rep)
	if err != nil {
		return result{Err: err.Error()}
	}
	nodes, err := writeClusterConfigs(o, e, dir)
	if err != nil {
		return result{Err: err.Error()}
	}
	t0 := time.Now()
	procs := make([]*proc, 0, len(nodes))
	stopAll := func() {
		for _, p := range procs {
			_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			if err := p.wait(ctx, 30*time.Second); err != nil && r.Err == "" {
				r.Err = fmt.Sprintf("stopping a node: %v", err)
			}
			p.account(&r)
		}
	}
	for _, n := range nodes {
		p, err := start(ctx, o, e.bins.crawler, filepath.Join(dir, n.id+".stdout"), "node", "--config", n.config, "--status", n.status)
		if err != nil {
			stopAll()
			return result{Err: err.Error()}
		}
		procs = append(procs, p)
	}
	if err := waitTerminated(ctx, o, dir, nodes, procs); err != nil {
		r.Err = err.Error()
		stopAll()
		return r
	}
	r.Wall = time.Since(t0).Seconds()
	scrapeCluster(&r, nodes)
	stopAll()
	for _, n := range nodes {
		if err := readCrawlLog(filepath.Join(dir, n.id, "crawl.log"), &r.fetched); err != nil && r.Err == "" {
			r.Err = err.Error()
		}
		for _, sub := range []string{"frontier", "due", "spool"} {
			_ = os.RemoveAll(filepath.Join(dir, n.id, sub))
		}
	}
	return r
}

// writeClusterConfigs writes the three nodes' configuration files.
func writeClusterConfigs(o options, e *env, dir string) ([]clusterNode, error) {
	var members []nodeconfig.Member
	nodes := make([]clusterNode, len(clusterIDs))
	for i, id := range clusterIDs {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		members = append(members, nodeconfig.Member{ID: id, Addr: a})
		nodes[i].id = id
		if nodes[i].metrics, err = freeAddr(); err != nil {
			return nil, err
		}
		if nodes[i].status, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	zero := nodeconfig.Duration(0)
	for i, id := range clusterIDs {
		c := nodeconfig.Config{
			ID: id, Listen: members[i].Addr, Members: members,
			DataDir: filepath.Join(dir, id),
			TLS: nodeconfig.TLS{CA: filepath.Join(e.pki, "ca.pem"), Cert: filepath.Join(e.pki, id+".pem"),
				Key: filepath.Join(e.pki, id+"-key.pem")},
			Workers:      o.nodeWorkers,
			Politeness:   nodeconfig.Politeness{MinDelay: &zero},
			AllowPrivate: true, Resolve: map[string]string{e.web.Domain(): e.addr},
			Scope: "suffixes", Suffixes: []string{e.web.Domain()},
			SeedsFile: e.seeds, MetricsListen: nodes[i].metrics,
		}
		b, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return nil, err
		}
		nodes[i].config = filepath.Join(dir, id+".json")
		if err := os.WriteFile(nodes[i].config, b, 0o644); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// waitTerminated polls every node's /metrics until it reports the crawl's
// termination; any node that exits first, or the run timeout, is an error.
// Every poll checks every node: one node that dies (a port lost before its
// bind) leaves the others waiting for it until the timeout.
func waitTerminated(ctx context.Context, o options, dir string, nodes []clusterNode, procs []*proc) error {
	deadline := time.Now().Add(o.runTimeout)
	for _, n := range nodes {
		want := fmt.Sprintf("sextant_crawl_terminated{node=%q} 1", n.id)
		for {
			if ctx.Err() != nil || time.Now().After(deadline) {
				return fmt.Errorf("%s: no termination within %v (see %s)", n.id, o.runTimeout, dir)
			}
			if err := exitedEarly(dir, nodes, procs); err != nil {
				return err
			}
			if t, err := get("http://" + n.metrics + "/metrics"); err == nil && strings.Contains(t, want) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// exitedEarly reports the first node whose process has exited (before the
// crawl terminated), with the end of its output.
func exitedEarly(dir string, nodes []clusterNode, procs []*proc) error {
	for i, n := range nodes {
		select {
		case <-procs[i].Done():
			err := procs[i].Err()
			out, _ := os.ReadFile(filepath.Join(dir, n.id+".stdout"))
			return fmt.Errorf("%s exited before the crawl terminated (%v); the end of %s.stdout:\n%s", n.id, err, filepath.Join(dir, n.id), tail(string(out), 2000))
		default:
		}
	}
	return nil
}

// scrapeCluster adds the nodes' final splitter and wire counters (every
// node has terminated) and their per-peer cache advice to r.
func scrapeCluster(r *result, nodes []clusterNode) {
	for _, n := range nodes {
		t, err := get("http://" + n.metrics + "/metrics")
		if err != nil {
			continue
		}
		r.Discovered += promtext.Sum(t, "sextant_splitter_urls_discovered_total")
		r.Suppressed += promtext.Sum(t, "sextant_splitter_urls_suppressed_total")
		r.Sent += promtext.Sum(t, "sextant_splitter_urls_sent_total")
		r.WireBytes += promtext.Sum(t, "sextant_wire_bytes_total")
		r.RawBytes += promtext.Sum(t, "sextant_wire_raw_url_bytes_total")
		if a, ok := peerAdvice(n.status); ok {
			a.Node = n.id
			r.PeerAdvice = append(r.PeerAdvice, a)
		}
	}
}

// advice is the part of mrc.Advice the report uses.
type advice struct {
	Node             string
	CurrentPerWorker int     `json:"currentPerWorker"`
	CurrentMiss      float64 `json:"currentMiss"`
	KneePerWorker    int     `json:"kneePerWorker"`
	KneeMiss         float64 `json:"kneeMiss"`
	Reached20        bool    `json:"reached20"`
	K20PerWorker     int     `json:"k20PerWorker"`
}

// peerAdvice reads a node's status page JSON and returns the advice for
// its per-peer splitter caches, if the page has one yet.
func peerAdvice(addr string) (advice, bool) {
	t, err := get("http://" + addr + "/status.json")
	if err != nil {
		return advice{}, false
	}
	var resp struct {
		Node struct {
			Caches []struct {
				Unit   string  `json:"unit"`
				Advice *advice `json:"advice"`
			} `json:"caches"`
		} `json:"node"`
	}
	if json.Unmarshal([]byte(t), &resp) != nil {
		return advice{}, false
	}
	for _, c := range resp.Node.Caches {
		if c.Unit == "peer" && c.Advice != nil {
			return *c.Advice, true
		}
	}
	return advice{}, false
}

func get(u string) (string, error) {
	resp, err := nsClient.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
