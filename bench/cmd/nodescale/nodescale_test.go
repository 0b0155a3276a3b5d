package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/promtext"
)

const perfSample = `    5000000 
	          1 runtime.mallocgc
	          2 google.golang.org/grpc/internal/transport.(*loopyWriter).run
	          3 runtime.goexit.abi0

    5000000 
	          1 github.com/sextant-crawler/sextant/due.(*DUE).Add
	          2 github.com/sextant-crawler/sextant/internal/memberserve.(*server).Send
	          3 google.golang.org/grpc.(*Server).handleStream

    10000000 
	          1 github.com/sextant-crawler/sextant/extract.Links
	          2 github.com/sextant-crawler/sextant/internal/crawl.(*Node).Run.gowrap1
	          3 runtime.goexit.abi0

    2000000 
	          1 google.golang.org/protobuf/proto.Marshal
	          2 github.com/sextant-crawler/sextant/hostsplit.(*Transport).send
`

// TestParsePerfScript: a receiver's URL-seen test under gRPC frames is not
// the cluster's cost; sender-side and gRPC-only stacks are.
func TestParsePerfScript(t *testing.T) {
	s, err := parsePerfScript(strings.NewReader(perfSample))
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if s.Samples != 4 || !near(s.Total, 0.022) {
		t.Fatalf("samples %d total %v, want 4 and 0.022", s.Samples, s.Total)
	}
	if !near(s.Cluster, 0.007) || !near(s.GRPC, 0.010) || !near(s.Split, 0.007) || !near(s.Proto, 0.002) {
		t.Errorf("got %+v, want cluster 0.007, grpc 0.010, split 0.007, proto 0.002", s)
	}
	const g = "gRPC, splitter sender, group flusher, termination probe"
	if w := s.Roots["workers (fetch, extract, route → splitter)"]; !near(w, 0.010) || !near(s.Roots[g], 0.012) {
		t.Errorf("roots %v: want 0.010 s in workers, 0.012 s in %s", s.Roots, g)
	}
	if _, err := parsePerfScript(strings.NewReader("not-a-period\n")); err == nil {
		t.Error("a sample line without a period parsed")
	}
}

func FuzzParsePerfScript(f *testing.F) {
	f.Add(perfSample)
	f.Add("\n\n  12 \n\t1 x\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := parsePerfScript(strings.NewReader(in))
		if err != nil {
			return
		}
		if s.Cluster > s.Total+1e-9 || s.Samples < 0 || math.IsNaN(s.Total) {
			t.Fatalf("inconsistent %+v", s)
		}
	})
}

func TestParseNft(t *testing.T) {
	out := "table inet nodescale {\n\tcounter grpc_out {\n\t\tpackets 12 bytes 3456\n\t}\n}\n"
	if c, err := parseNft(out); err != nil || c.Bytes != 3456 || c.Packets != 12 {
		t.Errorf("got %+v, %v; want 12 packets, 3456 bytes", c, err)
	}
	if _, err := parseNft("table inet x {}"); err == nil {
		t.Error("no bytes: no error")
	}
}

func TestPromSum(t *testing.T) {
	text := "# TYPE sextant_splitter_urls_sent_total counter\nsextant_splitter_urls_sent_total{node=\"node-0\",peer=\"node-1\"} 10\n" +
		"sextant_splitter_urls_sent_total{node=\"node-0\",peer=\"node-2\"} 2.5\nsextant_splitter_urls_sent_totalx 9\n"
	if got := promtext.Sum(text, "sextant_splitter_urls_sent_total"); got != 12.5 {
		t.Errorf("got %v, want 12.5", got)
	}
}

// TestCgroupV1 makes a node's group in a fake v1 hierarchy (cpu and
// cpuacct mounted apart, as on the hybrid host): the quota, the share, the
// join script and the usage read back.
func TestCgroupV1(t *testing.T) {
	root := t.TempDir()
	old := cgroupRoots
	t.Cleanup(func() { cgroupRoots = old })
	cgroupRoots.unified = filepath.Join(root, "unified-none")
	cgroupRoots.cpu, cgroupRoots.cpuacct = filepath.Join(root, "cpu"), filepath.Join(root, "cpuacct")
	for _, d := range []string{cgroupRoots.cpu, cgroupRoots.cpuacct} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cgroupRoots.cpu, "cpu.cfs_quota_us"), []byte("-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cg, err := newCgroup("x-node-0", 0.6, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if cg.v2 || len(cg.dirs) != 2 {
		t.Fatalf("got %+v, want v1 with cpu and cpuacct dirs", cg)
	}
	b, _ := os.ReadFile(filepath.Join(cgroupRoots.cpu, "x-node-0", "cpu.cfs_quota_us"))
	if string(b) != "60000" {
		t.Errorf("quota %q, want 60000", b)
	}
	if s := cg.joinScript(); !strings.Contains(s, filepath.Join(cgroupRoots.cpuacct, "x-node-0", "cgroup.procs")) {
		t.Errorf("join script %q does not join cpuacct", s)
	}
	_ = os.WriteFile(filepath.Join(cgroupRoots.cpuacct, "x-node-0", "cpuacct.usage"), []byte("1500000000\n"), 0o644)
	_ = os.WriteFile(filepath.Join(cgroupRoots.cpu, "x-node-0", "cpu.stat"), []byte("nr_periods 9\nnr_throttled 3\nthrottled_time 250000000\n"), 0o644)
	if u, err := cg.usage(); err != nil || u != 1.5 {
		t.Errorf("usage %v, %v; want 1.5", u, err)
	}
	if s, n, err := cg.throttled(); err != nil || s != 0.25 || n != 3 {
		t.Errorf("throttled %v s in %d periods, %v; want 0.25 s in 3", s, n, err)
	}
	if _, err := newCgroup("y", 0.001, 1024); err == nil {
		t.Error("a quota under 1 ms per period was accepted")
	}
}

// TestModel fits the model to two synthetic runs and checks its algebra.
func TestModel(t *testing.T) {
	rep := &report{Opts: options{ns: []int{1, 2, 3}}, Runs: []runResult{
		{N: 1, Wall: 10, Pages: 5000, CPU: []float64{5}},
		{N: 2, Wall: 10, Pages: 8000, CPU: []float64{5, 5}, Discovered: 4000, Suppressed: 3000, Sent: 1000,
			WireBytes: 10000, Prof: cpuSplit{Total: 10, Cluster: 1}},
	}}
	m := rep.fit()
	if !m.Valid || m.FitN != 2 || m.C1 != 1e-3 || m.U != 0.5 || m.H != 0.75 || m.B != 10 || m.D != 1 {
		t.Fatalf("fit %+v", m)
	}
	// 1.25 ms per page at N = 2, 0.125 cross URLs sent per page: 2 ms each
	// all-in; the profile sees 10% of 10 CPU s over 1000 cross URLs.
	if math.Abs(m.K-2e-3) > 1e-12 || math.Abs(m.KProf-1e-3) > 1e-12 {
		t.Errorf("k = %v, k(profile) = %v, want 2e-3 and 1e-3", m.K, m.KProf)
	}
	// N = 3: 2/3 of a link per page is cross, a quarter of it sent.
	if got, want := m.rate(3), 0.5/(1e-3+2e-3/6); math.Abs(got-want) > 1e-9 {
		t.Errorf("rate(3) = %v, want %v", got, want)
	}
	// Averaging runs must not change them (the runs' CPU slices).
	rep.Runs = append(rep.Runs, rep.Runs[0])
	rep.Runs[0].Prof.Roots = map[string]float64{"x": 1}
	if m2 := rep.fit(); m2.C1 != m.C1 || rep.Runs[0].CPU[0] != 5 || rep.Runs[0].Prof.Roots["x"] != 1 {
		t.Errorf("refit c1 %v (want %v), run 0 CPU %v (want 5)", m2.C1, m.C1, rep.Runs[0].CPU)
	}
	if !strings.Contains(rep.markdown(), "| 1000 |") {
		t.Error("the model table has no N = 1000 row")
	}
}

// TestWriteSection: the section goes into `make bench`'s hand-written
// region and is replaced, not repeated, the second time.
func TestWriteSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "B.md")
	orig := "# B\n\n<!-- hand-written: begin -->\nHAND\n" + handEnd + "\n\n## History\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := &report{Opts: options{ns: []int{1}}, Runs: []runResult{{N: 1, Wall: 1, Pages: 10, CPU: []float64{1}}}}
	for range 2 {
		if err := rep.writeSection(path); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	s := string(b)
	if strings.Count(s, "nodescale:begin") != 1 || !strings.Contains(s, "HAND\n") || !strings.HasSuffix(s, "## History\n") {
		t.Fatalf("report:\n%s", s)
	}
	if i, j := strings.Index(s, "nodescale:end"), strings.Index(s, handEnd); i > j {
		t.Errorf("the section is not inside the hand-written region:\n%s", s)
	}
}

// TestQuickRun runs the whole harness on a tiny web with 1 and 2 nodes
// (root: namespaces, cgroups, tc, nft, perf). Every part must work: a
// missing tool is a failure.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the crawler and crawls; skipped with -short")
	}
	if os.Getuid() != 0 {
		t.Fatal("needs root (network namespaces, cgroups, nft, perf)")
	}
	work := t.TempDir()
	out := filepath.Join(work, "B.md")
	o := options{out: out, work: work, root: "../../..", hosts: 20, pages: 300, workers: 8, ns: []int{1, 2}, reps: 1,
		cores: 0.5, shares: 4096, rate: "1gbit", rtt: 500 * time.Microsecond, perfHz: 499, runTimeout: 4 * time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	rep, err := run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Shape == "" {
		t.Error("no link shaping applied")
	}
	for _, r := range rep.Runs {
		if r.Err != "" {
			t.Fatalf("N=%d: %s", r.N, r.Err)
		}
		if r.Missing+r.Extra+r.Twice > 0 || r.Distinct != r.Oracle {
			t.Errorf("N=%d: %d distinct of %d in the oracle; missing %d %v, extra %d %v, twice %d",
				r.N, r.Distinct, r.Oracle, r.Missing, r.MissingEx, r.Extra, r.ExtraEx, r.Twice)
		}
		if len(r.CPU) != r.N || r.cpu() <= 0 || r.Prof.Samples == 0 {
			t.Errorf("N=%d: CPU %v, %d profile samples", r.N, r.CPU, r.Prof.Samples)
		}
		if r.N == 2 && (r.Sent == 0 || r.WireBytes == 0 || r.Prof.Cluster == 0) {
			t.Errorf("N=2: %v cross URLs sent, %v wire bytes, %v s in split+gRPC", r.Sent, r.WireBytes, r.Prof.Cluster)
		}
		if r.N == 1 && r.WireBytes != 0 {
			t.Errorf("N=1: %v gRPC bytes on the wire, want 0", r.WireBytes)
		}
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), "fitted to N = 1") {
		t.Errorf("no model in the report:\n%s", b)
	}
}
