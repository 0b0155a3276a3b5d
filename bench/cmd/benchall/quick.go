package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// quick is one quick package benchmark: the command, its parsed metrics
// per sub-benchmark, and its wall and CPU time.
type quick struct {
	Name    string
	Command string // as a user types it in the repository root
	Err     string
	Wall    float64
	CPU     float64
	MaxRSS  int64
	Lines   []benchLine // go test -bench output
	Output  string      // tail of a non-bench command's output
}

type benchLine struct {
	Name    string
	Metrics map[string]float64 // unit → value
}

func (q *quick) metric(sub, unit string) (float64, bool) {
	for _, l := range q.Lines {
		if strings.Contains(l.Name, sub) {
			v, ok := l.Metrics[unit]
			return v, ok
		}
	}
	return 0, false
}

// quickEstimate is the time the quick benchmarks and the profile are
// expected to need (kept free when deciding whether another round fits).
func quickEstimate(o options) time.Duration {
	d := time.Duration(0)
	if o.quick {
		d += 3 * time.Minute
	}
	if o.profile {
		d += 90 * time.Second
	}
	return d
}

func runQuick(ctx context.Context, o options, bins binaries) []quick {
	sim := filepath.Join(o.work, "cachesim")
	_ = os.RemoveAll(sim)
	specs := []struct {
		name, shown string
		env         []string
		bin         string
		args        []string
	}{
		{"DUE seen-set, 10⁶ distinct URLs (6×10⁶ candidates), vs a Go map",
			"DUE_BENCH_SCALES=1e6 DUE_BENCH_SKIP_pebble=1 DUE_BENCH_SKIP_gen=1 go test ./due -run '^$' -bench SeenSet -benchtime=1x -count 1",
			[]string{"DUE_BENCH_SCALES=1e6", "DUE_BENCH_SKIP_pebble=1", "DUE_BENCH_SKIP_gen=1"},
			"go", []string{"test", "./due", "-run", "^$", "-bench", "SeenSet", "-benchtime=1x", "-count", "1", "-timeout", "10m"}},
		{"cache lookup at k = 2^16 (full cache), vs a Go map",
			`go test ./cache -run '^$' -bench 'Lookup/(gomap|clock|random)/k=2\^16/' -benchtime 2000000x -count 1`,
			nil, "go", []string{"test", "./cache", "-run", "^$", "-bench", `Lookup/(gomap|clock|random)/k=2\^16/`, "-benchtime", "2000000x", "-count", "1", "-timeout", "10m"}},
		{"cachesim sweep, 10⁷ requests (synthetic Zipf + recency), 6 algorithms × k = 2^0…2^25",
			"crawler cachesim --gen zipf --n 10000000 --no-plots --out DIR",
			nil, bins.crawler, []string{"cachesim", "--gen", "zipf", "--n", "10000000", "--no-plots", "--out", sim}},
	}
	var out []quick
	for _, s := range specs {
		if ctx.Err() != nil {
			break
		}
		logf("quick: %s …", s.shown)
		q := quick{Name: s.name, Command: s.shown}
		name, args, uf := s.bin, s.args, ""
		if s.bin != "go" { // measure the command itself (see bench/cmd/rusage)
			uf = filepath.Join(o.work, "quick.rusage.json")
			_ = os.Remove(uf)
			name, args = bins.rusage, append([]string{"--out", uf, "--", s.bin}, s.args...)
		}
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = o.root
		cmd.Env = append(rootEnv(), s.env...)
		t0 := time.Now()
		b, err := cmd.CombinedOutput()
		q.Wall = time.Since(t0).Seconds()
		if uf != "" {
			if u, uerr := readUsage(uf); uerr == nil {
				q.CPU, q.MaxRSS = u.UserSec+u.SysSec, u.MaxRSS
			}
		}
		if err != nil {
			q.Err = fmt.Sprintf("%v: %s", err, tail(string(b), 600))
		}
		q.Lines = parseBench(string(b))
		if s.bin != "go" {
			q.Output = tail(string(b), 1500)
		}
		logf("quick: done in %.0f s %s", q.Wall, q.Err)
		out = append(out, q)
	}
	return out
}

var benchRe = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)\s+(.*)$`)

func parseBench(out string) []benchLine {
	var ls []benchLine
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := benchRe.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		l := benchLine{Name: m[1], Metrics: map[string]float64{}}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				l.Metrics[f[i+1]] = v
			}
		}
		ls = append(ls, l)
	}
	return ls
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// profile is a CPU profile of a Sextant crawl of the benchmark's web.
type profile struct {
	Command string
	Err     string
	Result  string // sextantprof's summary line
	Wall    float64
	CPU     float64
	Flat    string // go tool pprof -top
	Cum     string // go tool pprof -top -cum
}

// profileSextant crawls the benchmark's web once more with the single-node
// settings under a CPU profiler. `crawler crawl` has no --cpuprofile and the
// harness adds nothing to the product, so bench/cmd/sextantprof runs the
// same crawl.Node with the same flags (nodeflags.Add in cmd/crawler) and profiles it.
func profileSextant(ctx context.Context, o options, e *env) *profile {
	dir, err := runDir(o, "profile", 1)
	if err != nil {
		return &profile{Err: err.Error()}
	}
	pf := filepath.Join(dir, "cpu.pprof")
	args := []string{"--seeds", e.seeds, "--data", filepath.Join(dir, "data"),
		"--resolve", e.web.Domain() + "=" + e.addr, "--allow-private", "--min-delay", "0",
		"--scope", "suffixes", "--suffix", e.web.Domain(), "--sitemaps", "off", "--workers", strconv.Itoa(o.workers), "--cpuprofile", pf}
	p := &profile{Command: "sextantprof " + strings.Join(args, " ") + "; go tool pprof -top [-cum] -nodecount 25 cpu.pprof"}
	logf("profile: %s", p.Command)
	t0 := time.Now()
	uf := filepath.Join(dir, "rusage.json")
	bin, argv := nsCur.command(e.bins.rusage, append([]string{"--out", uf, "--", e.bins.prof}, args...)...)
	cmd := exec.CommandContext(ctx, bin, argv...)
	b, err := cmd.CombinedOutput()
	p.Wall = time.Since(t0).Seconds()
	if u, uerr := readUsage(uf); uerr == nil {
		p.CPU = u.UserSec + u.SysSec
	}
	p.Result = tail(string(b), 300)
	if err != nil {
		p.Err = fmt.Sprintf("%v: %s", err, tail(string(b), 600))
		return p
	}
	_ = os.RemoveAll(filepath.Join(dir, "data", "frontier"))
	_ = os.RemoveAll(filepath.Join(dir, "data", "due"))
	for _, cum := range []bool{false, true} {
		a := []string{"tool", "pprof", "-top", "-nodecount", "25"}
		if cum {
			a = append(a, "-cum")
		}
		top, err := exec.CommandContext(ctx, "go", append(a, e.bins.prof, pf)...).CombinedOutput()
		if err != nil {
			p.Err = fmt.Sprintf("pprof: %v: %s", err, tail(string(top), 300))
		}
		if cum {
			p.Cum = string(top)
		} else {
			p.Flat = string(top)
		}
	}
	return p
}
