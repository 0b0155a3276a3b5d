package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/promtext"
	"github.com/sextant-crawler/sextant/internal/crawl"
)

// runResult is one run of an N-node cluster.
type runResult struct {
	N, Rep                int
	Err                   string
	Wall                  float64   // s, start of the nodes → every node reports termination
	Pages                 int       // fetches in the crawl logs (robots.txt excluded)
	PerNode               []int     // pages by node
	SteadyRate            float64   // pages/s over the middle 80% of the fetches (all nodes)
	CPU                   []float64 // s, by node (cgroup usage)
	Throttled             []float64 // s, by node
	WebCPU                float64   // s, simweb
	Discovered, Sent      float64   // cross links found; cross URLs sent (after the per-peer caches)
	Received, Suppressed  float64
	WireBytes, AppBytes   float64 // nft: IP bytes on the gRPC port; the splitter's own wire counter
	WirePackets           float64 // nft: IP packets on the gRPC port
	Prof                  cpuSplit
	Distinct, Oracle      int
	Missing, Extra, Twice int
	OffWeb                int // fetches on no host of the web
	MissingEx, ExtraEx    []string
	Load                  string
}

// perNodeRate is pages/s per node over the whole run.
func (r runResult) perNodeRate() float64 {
	if r.Wall == 0 || r.N == 0 {
		return 0
	}
	return float64(r.Pages) / r.Wall / float64(r.N)
}

// runN runs an n-node cluster to the crawl's end and measures it.
func runN(ctx context.Context, o options, t *topology, w *web, pki string, n, rep int) (r runResult) {
	r = runResult{N: n, Rep: rep}
	dir := filepath.Join(o.work, fmt.Sprintf("n%d-r%d", n, rep))
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.Err = err.Error()
		return r
	}
	files, err := writeConfigs(o, w, pki, dir, n)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	nodes := make([]*node, n)
	defer func() {
		for _, nd := range nodes {
			if nd != nil && nd.cg != nil {
				nd.cg.remove()
			}
		}
	}()
	for i := range n {
		nd := &node{id: nodeID(i), ns: t.nodes[i], config: files[i], stdout: filepath.Join(dir, nodeID(i)+".out")}
		if nd.cg, err = newCgroup(t.prefix+nd.id, o.cores, o.shares); err != nil {
			r.Err = err.Error()
			return r
		}
		if nd.nft0, err = grpcBytes(nd.ns); err != nil {
			r.Err = err.Error()
			return r
		}
		nodes[i] = nd
	}
	web0 := w.cpu()
	t0 := time.Now()
	for _, nd := range nodes {
		if err := startNode(o.crawler, nd); err != nil {
			r.Err = err.Error()
			stopAll(nodes, &r)
			return r
		}
		if o.perfHz > 0 {
			if nd.perf, err = startPerf(t.perfCG, nd.proc.Cmd.Process.Pid, o.perfHz, filepath.Join(dir, nd.id+".perf"), filepath.Join(dir, nd.id+".perf.log")); err != nil {
				r.Err = err.Error()
				stopAll(nodes, &r)
				return r
			}
		}
	}
	if err := waitTerminated(ctx, nodes, o.runTimeout); err != nil {
		r.Err = err.Error()
		stopAll(nodes, &r)
		return r
	}
	r.Wall = time.Since(t0).Seconds()
	r.WebCPU = w.cpu() - web0
	r.Load = loadAvg()
	measure(ctx, nodes, &r)
	stopAll(nodes, &r)
	fetched := map[string]int{}
	var times []time.Time
	for _, nd := range nodes {
		k, err := readLog(filepath.Join(dir, nd.id, "crawl.log"), fetched, &times)
		if err != nil && r.Err == "" {
			r.Err = err.Error()
		}
		r.PerNode = append(r.PerNode, k)
		r.Pages += k
		if nd.perf != nil {
			s, err := nd.perf.analyze()
			if err != nil && r.Err == "" {
				r.Err = err.Error()
			}
			r.Prof.plus(s)
			if !o.keep {
				_ = os.Remove(nd.perf.data)
			}
		}
		if !o.keep {
			for _, sub := range []string{"frontier", "due", "spool", "warc"} {
				_ = os.RemoveAll(filepath.Join(dir, nd.id, sub))
			}
		}
	}
	r.SteadyRate = steadyRate(times)
	w.check(fetched, &r)
	return r
}

// measure reads, while the terminated nodes still run, their splitter
// counters, the cgroups' CPU and the nft byte counters.
func measure(ctx context.Context, nodes []*node, r *runResult) {
	for _, nd := range nodes {
		if t, err := nd.metrics(ctx); err == nil {
			r.Discovered += promtext.Sum(t, "sextant_splitter_urls_discovered_total")
			r.Suppressed += promtext.Sum(t, "sextant_splitter_urls_suppressed_total")
			r.Sent += promtext.Sum(t, "sextant_splitter_urls_sent_total")
			r.Received += promtext.Sum(t, "sextant_splitter_urls_received_total")
			r.AppBytes += promtext.Sum(t, "sextant_wire_bytes_total")
		} else if r.Err == "" {
			r.Err = fmt.Sprintf("%s: /metrics: %v", nd.id, err)
		}
		u, err := nd.cg.usage()
		if err != nil && r.Err == "" {
			r.Err = err.Error()
		}
		r.CPU = append(r.CPU, u)
		th, _, _ := nd.cg.throttled()
		r.Throttled = append(r.Throttled, th)
		b, err := grpcBytes(nd.ns)
		if err != nil && r.Err == "" {
			r.Err = err.Error()
		}
		r.WireBytes += float64(b.Bytes - nd.nft0.Bytes)
		r.WirePackets += float64(b.Packets - nd.nft0.Packets)
	}
}

func stopAll(nodes []*node, r *runResult) {
	for _, nd := range nodes {
		if nd == nil {
			continue
		}
		if err := nd.stop(); err != nil && r.Err == "" {
			r.Err = err.Error()
		}
		if nd.perf != nil {
			nd.perf.stop()
		}
	}
}

// readLog adds a node's fetched URLs (robots.txt fetches excluded) and
// their times, and returns how many it fetched.
func readLog(path string, into map[string]int, times *[]time.Time) (int, error) {
	es, st, err := crawl.ReadLog(path)
	if err != nil {
		return 0, err
	}
	if st.Malformed > 0 {
		return 0, fmt.Errorf("%s: %d malformed lines: %w", path, st.Malformed, crawl.ErrBadLogLine)
	}
	k := 0
	for _, e := range es {
		if e.Outcome == crawl.OutcomeRobots {
			continue
		}
		into[e.URL]++
		*times = append(*times, e.Time)
		k++
	}
	return k, nil
}

// steadyRate is the fetch rate between the 10th and the 90th percentile
// of the fetch times: the crawl without its ramp-up from three seeds and
// its tail.
func steadyRate(ts []time.Time) float64 {
	if len(ts) < 20 {
		return 0
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	a, b := len(ts)/10, len(ts)*9/10
	d := ts[b].Sub(ts[a]).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(b-a) / d
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	s := string(b)
	n := 0
	for i := range s {
		if s[i] == ' ' {
			n++
			if n == 3 {
				return s[:i]
			}
		}
	}
	return s
}
