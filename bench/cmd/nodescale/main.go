// Command nodescale measures what a machine buys (issue 29, part 3;
// `make scale-nodes`): it runs 1, 2 and 3 `crawler node` processes (an mTLS
// cluster, as `crawler certs` and node configs make it), each in its own
// CPU-limited cgroup and its own network namespace, joined by veth links
// to a bridge in a router namespace and shaped like a data-centre link,
// against ONE simweb in a namespace of its own. Per run it measures pages/s
// per node, each node's CPU (cgroup usage and throttling), the CPU its
// profile (perf) spends in the splitter, gRPC and protobuf, the gRPC bytes
// on the wire (nft counters on the gRPC port) and the cross URLs (the nodes'
// /metrics), and checks the union of the fetched sets against the oracle.
// From these costs it fits a cost model (docs/bench/scaling.md) and
// regenerates its section of BENCHMARKS.md.
//
// Needs root, iproute2, tc, nft, perf and a cgroup hierarchy with the cpu
// controller (v2's cpu.max or v1's cfs quota). Run from bench/:
//
//	cd bench && go run ./cmd/nodescale -out ../BENCHMARKS.md
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	out, work, root string
	crawler         string // built binary (set by build)
	hosts, pages    int
	workers         int
	ns              []int
	reps            int
	cores           float64
	shares          int
	rate            string
	rtt             time.Duration
	perfHz          int
	runTimeout      time.Duration
	keep            bool
	from            string // rewrite -out from this results.json, run nothing
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodescale:", err)
		os.Exit(2)
	}
	if o.from != "" {
		if err := rewrite(o); err != nil {
			fmt.Fprintln(os.Stderr, "nodescale:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "nodescale:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	var ns string
	fs := flag.NewFlagSet("nodescale", flag.ContinueOnError)
	fs.StringVar(&o.out, "out", "../BENCHMARKS.md", "report whose node-scaling section is (re)generated (\"\": none)")
	fs.StringVar(&o.work, "work", "out/nodescale", "directory for the binary, data dirs, logs and profiles")
	fs.StringVar(&o.root, "root", "..", "the Sextant repository (module root)")
	fs.IntVar(&o.hosts, "hosts", 1000, "simweb hosts (the web of `make bench`)")
	fs.IntVar(&o.pages, "pages", 55000, "simweb articles in all")
	fs.IntVar(&o.workers, "workers", 32, "workers per node (the same at every N)")
	fs.StringVar(&ns, "nodes", "1,2,3", "cluster sizes to run, in order")
	fs.IntVar(&o.reps, "reps", 2, "rounds over -nodes")
	fs.Float64Var(&o.cores, "cpu", 0.5, "CPU quota of each node's cgroup, in cores")
	fs.IntVar(&o.shares, "shares", 100000, "cpu.shares of the nodes' and simweb's cgroups (v1; v2: /100 as cpu.weight): high, so that on a shared machine each node's quota binds, not the other tenants' load")
	fs.StringVar(&o.rate, "rate", "1gbit", "bandwidth of each node's link, each way (tc)")
	fs.DurationVar(&o.rtt, "rtt", 500*time.Microsecond, "round-trip delay of a node's link (netem, half each way; ignored without sch_netem)")
	fs.IntVar(&o.perfHz, "perf-hz", 199, "perf sampling frequency of every node (0: no profile)")
	fs.DurationVar(&o.runTimeout, "run-timeout", 15*time.Minute, "give up a run after this long")
	fs.BoolVar(&o.keep, "keep", false, "keep stores and profiles of every run")
	fs.StringVar(&o.from, "from", "", "only rewrite -out's section from the results.json of an earlier run (give that run's -hosts, -pages, -workers, -cpu)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, s := range strings.Split(ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 9 {
			return o, fmt.Errorf("-nodes: %q: want sizes 1..9", s)
		}
		o.ns = append(o.ns, n)
	}
	if o.hosts < 1 || o.pages < o.hosts || o.workers < 1 || o.reps < 1 || o.cores <= 0 {
		return o, fmt.Errorf("need hosts ≥ 1, pages ≥ hosts, workers ≥ 1, reps ≥ 1, cpu > 0")
	}
	return o, nil
}

// qdiscs are the link shapes to try, best first: netem (rate and delay),
// then tbf (rate only) on kernels without sch_netem.
func qdiscs(o options) [][]string {
	half := fmt.Sprintf("%dus", o.rtt.Microseconds()/2)
	return [][]string{
		{"netem", "delay", half, "rate", o.rate, "limit", "10000"},
		{"tbf", "rate", o.rate, "burst", "256kb", "latency", "20ms"},
	}
}

// run does every run and writes the report; it returns the results.
func run(ctx context.Context, o options) (*report, error) {
	var err error
	for _, p := range []*string{&o.work, &o.root} {
		if *p, err = filepath.Abs(*p); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return nil, err
	}
	rep := &report{Started: time.Now().UTC(), LoadBefore: loadAvg(), Opts: o}
	if o.crawler, err = build(ctx, o); err != nil {
		return nil, err
	}
	maxN := 0
	for _, n := range o.ns {
		maxN = max(maxN, n)
	}
	t, err := newTopology(fmt.Sprintf("sxs%d", os.Getpid()%100000), maxN, qdiscs(o))
	if err != nil {
		return nil, err
	}
	defer t.close()
	rep.Shape = t.shape
	if t.perfCG, err = newCgroup(t.prefix+"perf", 0, o.shares); err != nil {
		return nil, err
	}
	defer t.perfCG.remove()
	w, err := startWeb(ctx, o, o.crawler, t.web)
	if err != nil {
		return nil, err
	}
	defer w.close()
	rep.Oracle = w.size
	pki := filepath.Join(o.work, "pki")
	_ = os.RemoveAll(pki)
	var ips []string
	for i := range maxN {
		ips = append(ips, nodeIP(i))
	}
	if out, err := exec.CommandContext(ctx, o.crawler, "certs", "--nodes", strconv.Itoa(maxN), "--out", pki,
		"--hosts", strings.Join(ips, ",")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("crawler certs: %w: %s", err, out)
	}
	logf("web: %d hosts, %d URLs in the oracle; links shaped by %q; %v cores per node", o.hosts, w.size, t.shape, o.cores)
	for r := 1; r <= o.reps; r++ {
		for _, n := range o.ns {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			res := runN(ctx, o, t, w, pki, n, r)
			logf("%s", res.summary())
			rep.Runs = append(rep.Runs, res)
		}
	}
	rep.LoadAfter = loadAvg()
	b, _ := json.MarshalIndent(rep, "", "  ")
	_ = os.WriteFile(filepath.Join(o.work, "results.json"), b, 0o644)
	if o.out != "" {
		if err := rep.writeSection(o.out); err != nil {
			return rep, err
		}
		logf("wrote the node-scaling section of %s", o.out)
	}
	return rep, nil
}

// build compiles the crawler from the repository (its own module).
func build(ctx context.Context, o options) (string, error) {
	bin := filepath.Join(o.work, "bin", "crawler")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/crawler")
	cmd.Dir = o.root
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/crawler: %w\n%s", err, out)
	}
	return bin, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s nodescale: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// rewrite regenerates the report's section from saved results.
func rewrite(o options) error {
	b, err := os.ReadFile(o.from)
	if err != nil {
		return err
	}
	rep := &report{Opts: o}
	if err := json.Unmarshal(b, rep); err != nil {
		return fmt.Errorf("%s: %w", o.from, err)
	}
	// Profiles kept (-keep) beside the results are analysed again, so
	// that a change of the classification applies to saved runs.
	dir := filepath.Dir(o.from)
	for i, r := range rep.Runs {
		var s cpuSplit
		for j := range r.N {
			f := filepath.Join(dir, fmt.Sprintf("n%d-r%d", r.N, r.Rep), nodeID(j)+".perf")
			if _, err := os.Stat(f); err != nil {
				s = r.Prof
				break
			}
			p := &perfRec{data: f, log: f + ".log"}
			one, err := p.analyze()
			if err != nil {
				return err
			}
			s.plus(one)
		}
		rep.Runs[i].Prof = s
	}
	return rep.writeSection(o.out)
}
