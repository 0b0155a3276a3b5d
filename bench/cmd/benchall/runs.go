package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/harness"
	"github.com/sextant-crawler/sextant/internal/crawl"
)

// result is one contender run.
type result struct {
	Kind  string
	Rep   int
	Load  string // load average right after the run
	Err   string
	Procs int

	Wall   float64 // seconds, first process start to the crawl's end
	CPU    float64 // seconds, utime+stime summed over the run's processes
	SrvCPU float64 // seconds of simweb CPU during the run
	MaxRSS int64   // bytes, Maxrss summed over the run's processes

	// Completeness, from the contender's own per-fetch log.
	Pages        int // fetches logged (robots.txt fetches excluded)
	Distinct     int // distinct URLs fetched on the web's hosts
	FetchedTwice int // distinct URLs fetched more than once
	Missing      int // oracle URLs not fetched
	Extra        int // fetched URLs on the web not in the oracle's set
	OffWeb       int // fetches of URLs on no host of the web
	OracleSize   int
	MissingEx    []string `json:",omitempty"`
	ExtraEx      []string `json:",omitempty"`

	// Cluster only: sums over the nodes of their /metrics at termination.
	Discovered, Suppressed, Sent float64
	WireBytes, RawBytes          float64
	// Cluster only: each node's live sizing advice for its per-peer
	// caches (status page /status.json, SHARDS miss-ratio curve, CLOCK).
	PeerAdvice []advice `json:",omitempty"`

	fetched []string
}

func (r *result) pagesPerSec() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Pages) / r.Wall
}
func (r *result) cpuPer1000() float64 {
	if r.Pages == 0 {
		return 0
	}
	return 1000 * r.CPU / float64(r.Pages)
}
func (r *result) srvPer1000() float64 {
	if r.Pages == 0 {
		return 0
	}
	return 1000 * r.SrvCPU / float64(r.Pages)
}
func (r *result) rssPerURL() float64 {
	if r.Distinct == 0 {
		return 0
	}
	return float64(r.MaxRSS) / float64(r.Distinct)
}

func (r *result) summary() string {
	if r.Err != "" {
		return fmt.Sprintf("FAILED: %s", r.Err)
	}
	return fmt.Sprintf("%d pages in %.1f s = %.0f pages/s; CPU %.1f s (%.2f s/1000 pages, simweb %.2f); peak RSS %.0f MiB (%.0f B/URL); distinct %d, twice %d, missing %d, extra %d, off-web %d",
		r.Pages, r.Wall, r.pagesPerSec(), r.CPU, r.cpuPer1000(), r.srvPer1000(), float64(r.MaxRSS)/(1<<20), r.rssPerURL(),
		r.Distinct, r.FetchedTwice, r.Missing, r.Extra, r.OffWeb)
}

type runner func(ctx context.Context, o options, e *env, rep int) result

var runners = map[string]runner{
	"ceiling": runCeiling,
	"sextant": func(ctx context.Context, o options, e *env, rep int) result {
		return runSextant(ctx, o, e, rep, "sextant")
	},
	// Sextant without its politeness factor (next request to a host as
	// soon as the last one ends, like colly and the ceiling).
	"sextant-f0": func(ctx context.Context, o options, e *env, rep int) result {
		return runSextant(ctx, o, e, rep, "sextant-f0", "--factor", "0")
	},
	"cluster": runCluster,
	"colly":   runColly,
	"scrapy":  runScrapy,
	"wget2":   runWget2,
	// The HTTPS row: the same contenders on the web with HTTPS hosts (the
	// env passed is the HTTPS one; both trust its CA).
	"ceiling-https": runCeiling,
	"sextant-https": func(ctx context.Context, o options, e *env, rep int) result {
		return runSextant(ctx, o, e, rep, "sextant-https")
	},
	"sextant-f0-https": func(ctx context.Context, o options, e *env, rep int) result {
		return runSextant(ctx, o, e, rep, "sextant-f0-https", "--factor", "0")
	},
}

// proc is one started process of a run. Every contender runs under
// bench/cmd/rusage, which reports the child's own CPU and peak RSS (see
// there why the harness cannot take ru_maxrss of its direct children).
type proc struct {
	*harness.Proc
	usage string // rusage's JSON output
}

// usageBin is the rusage wrapper, set by build.
var usageBin string

func start(ctx context.Context, o options, name, outFile string, args ...string) (*proc, error) {
	p := &proc{usage: outFile + ".rusage.json"}
	_ = os.Remove(p.usage)
	bin, argv := nsCur.command(usageBin, append([]string{"--out", p.usage, "--", name}, args...)...)
	hp, err := harness.Start(exec.Command(bin, argv...), outFile)
	if err != nil {
		return nil, err
	}
	p.Proc = hp
	_ = ctx
	return p, nil
}

// wait waits for p to exit, stopping it on ctx or after the run timeout
// (SIGTERM, forwarded to the contender; SIGKILL to its process group 20 s
// later).
func (p *proc) wait(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.Done():
		return p.Err()
	case <-ctx.Done():
	case <-t.C:
	}
	_ = p.Stop(syscall.SIGTERM, 20*time.Second)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("killed after the run timeout %v", timeout)
}

// usage is bench/cmd/rusage's report.
type usage struct {
	UserSec float64 `json:"user_s"`
	SysSec  float64 `json:"sys_s"`
	MaxRSS  int64   `json:"max_rss_bytes"`
}

func readUsage(path string) (usage, error) {
	var u usage
	b, err := os.ReadFile(path)
	if err != nil {
		return u, err
	}
	return u, json.Unmarshal(b, &u)
}

// account adds p's contender's CPU time and peak RSS to r.
func (p *proc) account(r *result) {
	u, err := readUsage(p.usage)
	if err != nil {
		if r.Err == "" {
			r.Err = fmt.Sprintf("no resource usage: %v", err)
		}
		return
	}
	r.CPU += u.UserSec + u.SysSec
	r.MaxRSS += u.MaxRSS
	r.Procs++
}

func runDir(o options, kind string, rep int) (string, error) {
	d := filepath.Join(o.work, "runs", fmt.Sprintf("%s-%d", kind, rep))
	if err := os.RemoveAll(d); err != nil {
		return "", err
	}
	return d, os.MkdirAll(d, 0o755)
}

// readStatusLog reads "STATUS URL" lines (the ceiling's and colly's logs).
func readStatusLog(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		_, u, ok := strings.Cut(sc.Text(), " ")
		if ok {
			out = append(out, u)
		}
	}
	return out, sc.Err()
}

// readCrawlLog reads Sextant's crawl.log: every line but robots-disallowed
// URLs (no request sent) is a fetch. A malformed line fails the run, as it
// always did: a clean benchmark run writes none (a torn last line aside).
func readCrawlLog(path string, into *[]string) error {
	es, st, err := crawl.ReadLog(path)
	if err != nil {
		return err
	}
	if st.Malformed > 0 {
		return fmt.Errorf("%s: %d malformed lines: %w", path, st.Malformed, crawl.ErrBadLogLine)
	}
	for _, e := range es {
		if e.Outcome != crawl.OutcomeRobots {
			*into = append(*into, e.URL)
		}
	}
	return nil
}

func runCeiling(ctx context.Context, o options, e *env, rep int) (r result) {
	kind := "ceiling"
	if e.https {
		kind = "ceiling-https"
	}
	dir, err := runDir(o, kind, rep)
	if err != nil {
		return result{Err: err.Error()}
	}
	log := filepath.Join(dir, "fetch.log")
	t0 := time.Now()
	args := []string{"--urls", e.urls, "--connect", e.addr, "--workers", strconv.Itoa(o.workers), "--log", log}
	if e.ca != "" {
		args = append(args, "--ca-file", e.ca)
	}
	p, err := start(ctx, o, e.bins.ceiling, filepath.Join(dir, "stdout"), args...)
	if err != nil {
		return result{Err: err.Error()}
	}
	werr := p.wait(ctx, o.runTimeout)
	r.Wall = time.Since(t0).Seconds()
	p.account(&r)
	if werr != nil {
		r.Err = failure(werr, filepath.Join(dir, "stdout"))
	}
	if r.fetched, err = readStatusLog(log); err != nil && r.Err == "" {
		r.Err = err.Error()
	}
	return r
}

func runColly(ctx context.Context, o options, e *env, rep int) (r result) {
	dir, err := runDir(o, "colly", rep)
	if err != nil {
		return result{Err: err.Error()}
	}
	log := filepath.Join(dir, "fetch.log")
	t0 := time.Now()
	p, err := start(ctx, o, e.bins.colly, filepath.Join(dir, "stdout"), "--seeds", e.seeds, "--connect", e.addr,
		"--domain", e.web.Domain(), "--parallelism", strconv.Itoa(o.workers), "--log", log)
	if err != nil {
		return result{Err: err.Error()}
	}
	werr := p.wait(ctx, o.runTimeout)
	r.Wall = time.Since(t0).Seconds()
	p.account(&r)
	if werr != nil {
		r.Err = failure(werr, filepath.Join(dir, "stdout"))
	}
	if r.fetched, err = readStatusLog(log); err != nil && r.Err == "" {
		r.Err = err.Error()
	}
	return r
}

// crawlArgs is the command line of a single-node Sextant run: the
// settings it shares with the other contenders (min delay 0 — the default
// politeness factor still spaces requests to one host, one at a time —
// and scope = the web's domain), the kind's (extra), then the operator's
// (-sextant-args), last so that they win over the same flag given before.
func crawlArgs(o options, domain, addr, seeds, ca, data string, extra []string) []string {
	args := []string{"crawl", "--seeds", seeds, "--data", data,
		"--resolve", domain + "=" + addr, "--allow-private", "--min-delay", "0",
		"--scope", "suffixes", "--suffix", domain, "--sitemaps", "off", "--workers", strconv.Itoa(o.workers), "--progress", "0"}
	args = append(args, extra...)
	if ca != "" {
		args = append(args, "--ca-file", ca)
	}
	return append(args, o.sextantArgs...)
}

func runSextant(ctx context.Context, o options, e *env, rep int, kind string, extra ...string) (r result) {
	dir, err := runDir(o, kind, rep)
	if err != nil {
		return result{Err: err.Error()}
	}
	data := filepath.Join(dir, "data")
	t0 := time.Now()
	args := crawlArgs(o, e.web.Domain(), e.addr, e.seeds, e.ca, data, extra)
	p, err := start(ctx, o, e.bins.crawler, filepath.Join(dir, "stdout"), args...)
	if err != nil {
		return result{Err: err.Error()}
	}
	werr := p.wait(ctx, o.runTimeout)
	r.Wall = time.Since(t0).Seconds()
	p.account(&r)
	if werr != nil {
		r.Err = failure(werr, filepath.Join(dir, "stdout"))
	}
	if err := readCrawlLog(filepath.Join(data, "crawl.log"), &r.fetched); err != nil && r.Err == "" {
		r.Err = err.Error()
	}
	_ = os.RemoveAll(filepath.Join(data, "frontier"))
	_ = os.RemoveAll(filepath.Join(data, "due"))
	return r
}

// failure describes a contender's failed run with the end of its output,
// which the run directory (a test's temporary one) may not outlive.
func failure(err error, stdout string) string {
	b, _ := os.ReadFile(stdout)
	return fmt.Sprintf("%v (see %s): %s", err, stdout, strings.ReplaceAll(tail(string(b), 300), "\n", " "))
}
