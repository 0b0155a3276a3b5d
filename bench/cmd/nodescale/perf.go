package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfRec is `perf record` sampling one node process (and the threads it
// makes) on the cpu-clock software event, with call chains (Go keeps frame
// pointers on amd64). perf runs outside the node's cgroup: its own work is
// not charged to the node's quota. `crawler node` has no profiling flag or
// /debug/pprof, and the product is not changed for the benchmark.
type perfRec struct {
	cmd  *exec.Cmd
	data string
	log  string
	done chan error
}

// perf runs in cg (no quota, the nodes' weight) with a 16 MiB buffer: on a
// loaded machine a perf starved of CPU drops samples (a first run here
// sampled 53–85% of the nodes' cgroup CPU time).
func startPerf(cg *cgroup, pid, hz int, data, logFile string) (*perfRec, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	p := &perfRec{data: data, log: logFile, done: make(chan error, 1)}
	p.cmd = exec.Command("sh", "-c", cg.joinScript()+"exec \"$@\"", "sh", "perf", "record", "-e", "cpu-clock", "-F", strconv.Itoa(hz), "-g",
		"-m", "4096", "-p", strconv.Itoa(pid), "-o", data)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("perf record: %w", err)
	}
	go func() { err := p.cmd.Wait(); f.Close(); p.done <- err }()
	return p, nil
}

// stop ends the recording (perf writes its file on SIGINT; it also ends by
// itself when the process it samples exits).
func (p *perfRec) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// cpuSplit is a profile's CPU time by what a cross URL costs.
type cpuSplit struct {
	Total float64 // seconds sampled
	// Cluster is the time in stacks with a frame of the splitter
	// (hostsplit), gRPC (grpc, x/net/http2), protobuf or the member
	// server, less the stacks that also run the receiver's URL-seen test
	// (cache, due, frontier): a received URL costs that as a local link
	// does.
	Cluster float64
	// By part (a stack may count in several).
	Split, GRPC, Proto float64
	Samples            int
	Lost               int64 // chunks perf record reports lost
	// Roots is the time by the goroutine that ran it (rootGroup of the
	// frame under runtime.goexit).
	Roots map[string]float64 `json:",omitempty"`
}

// analyze runs perf script on the recording and classifies its stacks.
func (p *perfRec) analyze() (cpuSplit, error) {
	cmd := exec.Command("perf", "script", "-i", p.data, "-F", "period,ip,sym")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return cpuSplit{}, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return cpuSplit{}, fmt.Errorf("perf script: %w", err)
	}
	s, perr := parsePerfScript(out)
	if err := cmd.Wait(); err != nil {
		return s, fmt.Errorf("perf script: %w", err)
	}
	if b, err := os.ReadFile(p.log); err == nil {
		s.Lost = lostChunks(string(b))
	}
	return s, perr
}

// parsePerfScript reads `perf script -F period,ip,sym` output: per
// sample, a line with the period (ns of cpu-clock), then one line per frame
// ("ADDR SYMBOL"), then a blank line.
func parsePerfScript(r io.Reader) (cpuSplit, error) {
	var s cpuSplit
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var period float64
	var frames []string
	in := false
	flush := func() {
		if in {
			s.add(period/1e9, frames)
		}
		in, frames, period = false, frames[:0], 0
	}
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			flush()
		case !in:
			f := strings.Fields(t)
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil || v < 0 {
				return s, fmt.Errorf("perf script: a sample line without a period: %q", t)
			}
			in, period = true, v
		default:
			if _, sym, ok := strings.Cut(t, " "); ok {
				frames = append(frames, strings.TrimSpace(sym))
			}
		}
	}
	flush()
	return s, sc.Err()
}

// lostChunks reads perf record's "… and lost N chunks!" warnings.
func lostChunks(log string) int64 {
	var n int64
	for _, l := range strings.Split(log, "\n") {
		if i := strings.Index(l, " and lost "); i >= 0 {
			f := strings.Fields(l[i+len(" and lost "):])
			if len(f) > 0 {
				k, _ := strconv.ParseInt(f[0], 10, 64)
				n += k
			}
		}
	}
	return n
}

// Frame markers (substrings of Go symbol names).
var (
	splitMarks = []string{"sextant/hostsplit.", "sextant/internal/memberserve."}
	grpcMarks  = []string{"google.golang.org/grpc", "golang.org/x/net/http2"}
	protoMarks = []string{"google.golang.org/protobuf", "sextant/proto"}
	seenMarks  = []string{"sextant/due.", "sextant/cache.", "sextant/frontier."}
)

func anyMark(frames, marks []string) bool {
	for _, f := range frames {
		for _, m := range marks {
			if strings.Contains(f, m) {
				return true
			}
		}
	}
	return false
}

func (s *cpuSplit) add(secs float64, frames []string) {
	s.Samples++
	s.Total += secs
	if s.Roots == nil {
		s.Roots = map[string]float64{}
	}
	s.Roots[rootGroup(frames)] += secs
	sp, g, p := anyMark(frames, splitMarks), anyMark(frames, grpcMarks), anyMark(frames, protoMarks)
	if sp {
		s.Split += secs
	}
	if g {
		s.GRPC += secs
	}
	if p {
		s.Proto += secs
	}
	if (sp || g || p) && !anyMark(frames, seenMarks) {
		s.Cluster += secs
	}
}

func (s *cpuSplit) plus(o cpuSplit) {
	s.Total += o.Total
	s.Cluster += o.Cluster
	s.Split += o.Split
	s.GRPC += o.GRPC
	s.Proto += o.Proto
	s.Samples += o.Samples
	s.Lost += o.Lost
	for k, v := range o.Roots {
		if s.Roots == nil {
			s.Roots = map[string]float64{}
		}
		s.Roots[k] += v
	}
}

// rootGroups name the goroutines a node's CPU goes to, by a substring of
// the goroutine's start function (the frame under runtime.goexit); the
// first match wins; GC is any stack with a mark worker.
var rootGroups = []struct{ name, mark string }{
	{"workers (fetch, extract, route → splitter)", "crawl.(*Node).Run"},
	{"Go scheduler (mstart, mcall, morestack)", "runtime.mstart"},
	{"Go scheduler (mstart, mcall, morestack)", "runtime.mcall"},
	{"Go scheduler (mstart, mcall, morestack)", "runtime.morestack"},
	{"pebble WAL writers (frontier, DUE log, spool)", "NewLogWriter"},
	{"DUE merges", "sextant/due."},
	{"HTTP connections to the web", "net/http.(*Transport)"},
	{"GC", "runtime.gcenable"},
	{"gRPC, splitter sender, group flusher, termination probe", "google.golang.org/grpc"},
	{"gRPC, splitter sender, group flusher, termination probe", "sextant/hostsplit."},
	{"gRPC, splitter sender, group flusher, termination probe", "GroupFlusher"},
	{"gRPC, splitter sender, group flusher, termination probe", "termProbe"},
	{"metrics, status, health", "prometheus"},
	{"metrics, status, health", "net/http.(*Server)"},
	{"metrics, status, health", "serveNode"},
}

func rootGroup(frames []string) string {
	root := ""
	for _, f := range frames {
		if strings.Contains(f, "gcBgMarkWorker") {
			return "GC"
		}
		if !strings.HasPrefix(f, "runtime.goexit") {
			root = f
		}
	}
	for _, g := range rootGroups {
		if strings.Contains(root, g.mark) {
			return g.name
		}
	}
	return "other"
}
