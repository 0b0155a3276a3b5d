package main

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

type report struct {
	Started    time.Time
	Elapsed    time.Duration
	Opts       options
	Machine    string
	Revision   string
	LoadBefore string
	LoadAfter  string
	Web        string
	// The HTTPS web (when -https contenders ran) and its oracle's size.
	WebHTTPS    string
	OracleHTTPS int
	Rounds      int
	Runs        []result
	Quick       []quick
	Profile     *profile
	Notes       []string

	med     map[string]medians
	targets []target
}

type medians struct {
	n                                int // successful runs
	pps, cpu, srv, rss, rssURL, wall float64
	distinct, missing, extra, twice  float64
	reduction, wirePerURL, wireRatio float64
}

type target struct {
	what  string
	value float64
	want  string
	met   bool
	ok    bool // measurable
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (rp *report) compute() {
	rp.med = map[string]medians{}
	for _, k := range rp.Opts.kinds {
		var pps, cpu, srv, rss, rssURL, wall, dist, miss, extra, twice, red, wpu, wr []float64
		for _, r := range rp.Runs {
			if r.Kind != k || r.Err != "" {
				continue
			}
			pps = append(pps, r.pagesPerSec())
			cpu = append(cpu, r.cpuPer1000())
			srv = append(srv, r.srvPer1000())
			rss = append(rss, float64(r.MaxRSS))
			rssURL = append(rssURL, r.rssPerURL())
			wall = append(wall, r.Wall)
			dist = append(dist, float64(r.Distinct))
			miss = append(miss, float64(r.Missing))
			extra = append(extra, float64(r.Extra))
			twice = append(twice, float64(r.FetchedTwice))
			if r.Discovered > 0 {
				red = append(red, 1-r.Sent/r.Discovered)
			}
			if r.Sent > 0 {
				wpu = append(wpu, r.WireBytes/r.Sent)
			}
			if r.RawBytes > 0 {
				wr = append(wr, r.WireBytes/r.RawBytes)
			}
		}
		rp.med[k] = medians{n: len(pps), pps: median(pps), cpu: median(cpu), srv: median(srv), rss: median(rss), rssURL: median(rssURL),
			wall: median(wall), distinct: median(dist), missing: median(miss), extra: median(extra), twice: median(twice),
			reduction: median(red), wirePerURL: median(wpu), wireRatio: median(wr)}
	}
	s, c, col := rp.med["sextant"], rp.med["ceiling"], rp.med["colly"]
	sc, wg := rp.med["scrapy"], rp.med["wget2"]
	at := func(what, want string, v float64, ok, met bool) {
		rp.targets = append(rp.targets, target{what: what, want: want, value: v, ok: ok, met: ok && met})
	}
	v := ratio(s.pps, c.pps)
	at("Sextant pages/s ÷ ceiling pages/s", "≥ 0.9", v, s.n > 0 && c.n > 0, v >= 0.9)
	v = ratio(s.pps, col.pps)
	at("Sextant pages/s ÷ colly pages/s", "≥ 3", v, s.n > 0 && col.n > 0, v >= 3)
	v = ratio(s.rssURL, col.rssURL)
	at("Sextant peak RSS per URL ÷ colly's", "≤ 0.333", v, s.n > 0 && col.n > 0, v <= 1.0/3)
	if rp.ran("scrapy") {
		v = ratio(s.pps, sc.pps)
		at("Sextant pages/s ÷ Scrapy pages/s", "≥ 10", v, s.n > 0 && sc.n > 0, v >= 10)
	}
	if rp.ran("wget2") {
		v = ratio(s.pps, wg.pps)
		at("Sextant pages/s ÷ wget2 pages/s", "≥ 5", v, s.n > 0 && wg.n > 0, v >= 5)
		v = ratio(s.cpu, wg.cpu)
		at("Sextant CPU per page ÷ wget2's", "≤ 1", v, s.n > 0 && wg.n > 0, v <= 1)
	}
	// One target per HTTPS row: the TLS ceiling has no politeness, so the
	// --factor 0 row is the like-for-like one (issue 24).
	for _, k := range httpsRows {
		if !rp.ran(k) {
			continue
		}
		sh, ch := rp.med[k], rp.med["ceiling-https"]
		v = ratio(sh.pps, ch.pps)
		at(httpsTargetWhat[k], httpsTargetWant, v, sh.n > 0 && ch.n > 0, v >= httpsTarget)
	}
}

// The HTTPS rows compared with the TLS ceiling, and their target.
var (
	httpsRows       = []string{"sextant-https", "sextant-f0-https"}
	httpsTarget     = 0.7
	httpsTargetWant = "≥ 0.7"
	httpsTargetWhat = map[string]string{
		"sextant-https":    "HTTPS: Sextant pages/s ÷ TLS ceiling pages/s",
		"sextant-f0-https": "HTTPS, `--factor 0` (no politeness, as the TLS ceiling): Sextant pages/s ÷ TLS ceiling pages/s",
	}
)

// httpsTargetOf returns the target computed for the HTTPS row kind.
func (rp *report) httpsTargetOf(kind string) (target, bool) {
	for _, t := range rp.targets {
		if t.what == httpsTargetWhat[kind] {
			return t, true
		}
	}
	return target{}, false
}

// ran reports whether kind was asked for in this run.
func (rp *report) ran(kind string) bool {
	for _, k := range rp.Opts.kinds {
		if k == kind {
			return true
		}
	}
	return false
}

func (rp *report) allMet() bool {
	for _, t := range rp.targets {
		if !t.met {
			return false
		}
	}
	return true
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

var kindNames = map[string]string{
	"ceiling":    "ceiling (bare fetch + tokenize of the oracle's list)",
	"sextant":    "**Sextant, single node** (`crawler crawl`)",
	"sextant-f0": "Sextant, single node, politeness factor 0 (`--factor 0`)",
	"cluster":    "Sextant, 3-node cluster (`crawler node` ×3)",
	"colly":      "gocolly/colly v2.3.0",
	"scrapy":     "Scrapy 2.8 (Debian python3-scrapy, CrawlSpider)",
	"wget2":      "GNU Wget2 1.99 (Debian wget2, `-r -l 0 -H`)",

	"ceiling-https":    "TLS ceiling (bare fetch + tokenize over TLS, h2 where offered)",
	"sextant-https":    "**Sextant, single node, HTTPS web** (`crawler crawl --ca-file`)",
	"sextant-f0-https": "Sextant, single node, HTTPS web, politeness factor 0 (`--factor 0`)",
}

const (
	genBegin  = "<!-- generated by `make bench` (bench/cmd/benchall): begin; edits here are overwritten -->"
	genEnd    = "<!-- generated: end -->"
	handBegin = "<!-- hand-written: begin (kept verbatim by make bench) -->"
	handEnd   = "<!-- hand-written: end -->"
	histBegin = "<!-- history: begin (one row appended per make bench run) -->"
	histEnd   = "<!-- history: end -->"
)

// between returns the text between two marker lines of s.
func between(s, begin, end string) (string, bool) {
	i := strings.Index(s, begin)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(begin):]
	j := strings.Index(rest, end)
	if j < 0 {
		return "", false
	}
	return strings.Trim(rest[:j], "\n"), true
}

func (rp *report) write(path string) error {
	old, _ := os.ReadFile(path)
	hand, ok := between(string(old), handBegin, handEnd)
	if !ok && len(old) > 0 {
		// First run over the hand-written file: keep all of it but its title.
		h := string(old)
		if strings.HasPrefix(h, "# ") {
			if i := strings.Index(h, "\n"); i >= 0 {
				h = h[i+1:]
			}
		}
		hand = "## Per-package figures (hand-maintained, not re-measured by `make bench`)\n\n" + strings.TrimSpace(h)
	}
	hist, _ := between(string(old), histBegin, histEnd)
	hist = strings.TrimSpace(hist)
	if hist == "" {
		hist = "| run (UTC) | web | rounds | ceiling pages/s | Sextant pages/s | cluster pages/s | colly pages/s | Sextant ÷ ceiling | Sextant ÷ colly | RSS/URL Sextant ÷ colly | load before → after |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	}
	m := rp.med
	hist += fmt.Sprintf("\n| %s | %d hosts, %d URLs | %d | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %s → %s |",
		rp.Started.Format("2006-01-02 15:04"), rp.Opts.hosts, oracleSize(rp), rp.Rounds,
		m["ceiling"].pps, m["sextant"].pps, m["cluster"].pps, m["colly"].pps,
		rp.targets[0].value, rp.targets[1].value, rp.targets[2].value, rp.LoadBefore, rp.LoadAfter)

	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Sextant benchmarks\n\n")
	w("%s\n\n", genBegin)
	rp.writeGenerated(&b)
	w("\n%s\n\n", genEnd)
	w("%s\n\n%s\n\n%s\n\n", handBegin, hand, handEnd)
	w("## History\n\nMedians of each `make bench` run (same command, same web size unless the row says otherwise).\n\n%s\n%s\n%s\n", histBegin, hist, histEnd)
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func oracleSize(rp *report) int {
	for _, r := range rp.Runs {
		if r.OracleSize > 0 {
			return r.OracleSize
		}
	}
	return 0
}

func mib(b float64) float64 { return b / (1 << 20) }

// writeGenerated writes the section of BENCHMARKS.md make bench owns.
func (rp *report) writeGenerated(b *bytes.Buffer) {
	rp.writeTable(b)
	rp.writeRatios(b)
	rp.writeHTTPS(b)
	rp.writeTargets(b)
	rp.writeTraffic(b)
	rp.writeRunList(b)
	rp.writeQuick(b)
	rp.writeCitedAndProfile(b)
}

// writeTable writes the set-up and the table of medians.
func (rp *report) writeTable(b *bytes.Buffer) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	o := rp.Opts
	w("## Sextant vs the machine's ceiling, colly, Scrapy and wget2, on one synthetic web (issues 9 and 29)\n\n")
	w("Regenerate with `make bench` (= `cd bench && go run ./cmd/benchall -out ../BENCHMARKS.md`); ")
	w("run of %s UTC, %v in all.\n\n", rp.Started.Format("2006-01-02 15:04"), rp.Elapsed.Round(time.Second))
	w("- **Machine**: %s. Load average (1/5/15 min) before: %s, after: %s. ", rp.Machine, rp.LoadBefore, rp.LoadAfter)
	w("The machine is shared with other sessions: wall-clock figures move with their load; the runs alternate (")
	w("%s, repeated) so that load hits every contender alike, and the table gives medians.\n", strings.Join(o.kinds, ", "))
	w("- **Code measured**: %s.\n", rp.Revision)
	w("- **Web**: %s, served by one `crawler simweb` process on loopback for every run.\n", rp.Web)
	if o.netns {
		w("- **Name resolution**: simweb and every contender run in a private network namespace (`ip netns exec`) whose `/etc/hosts` names the web's hosts at 127.0.0.1 (simweb on port 80) and whose resolver fails at once; Scrapy and wget2 resolve the host names the ordinary way through it, Sextant, colly and the ceiling dial simweb's address directly (`--resolve`, `--connect`).\n")
	}
	w("- **Same settings for all**: %d-way parallelism (Sextant workers, colly Async parallelism, Scrapy `CONCURRENT_REQUESTS`, wget2 `--max-threads`, ceiling goroutines; the cluster has %d workers on each of 3 nodes), ", o.workers, o.nodeWorkers)
	w("at most one connection per host (wget2 cannot be told so: its threads share hosts, see docs/bench/peers.md), no minimum delay, the same 3 seeds and scope (`*.sim.test`), robots.txt obeyed (not by the ceiling), User-Agent of Sextant. ")
	w("Sextant keeps its default politeness factor (next request to a host ≥ 10 × the last fetch's duration after it, one at a time); colly, Scrapy (`CONCURRENT_REQUESTS_PER_DOMAIN` 1, `DOWNLOAD_DELAY` 0), wget2 (`--max-threads`) and the ceiling have none. See docs/bench/peers.md for each contender's exact configuration.\n")
	w("- **Measured per run**, each contender its own process(es): wall time from start to the end of the crawl; CPU = getrusage utime+stime; peak RSS = Maxrss (the cluster: summed over its 3 processes); pages = fetches in the contender's own per-fetch log (robots.txt excluded; Scrapy: every response its downloader received, wget2: its `--stats-site` CSV), its URLs normalised as the oracle's (WHATWG, no fragment: `http://h:80/x` and `http://h/x` are one URL); RSS per URL = peak RSS ÷ distinct URLs fetched. ")
	w("The fetched set is checked against simweb's oracle (missing, extra, fetched twice).\n\n")

	w("| contender | runs | pages/s | CPU s per 1,000 pages | simweb CPU s per 1,000 pages | peak RSS MiB | RSS bytes per URL | distinct URLs (oracle %d) | missing | extra | fetched twice |\n", oracleSize(rp))
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range o.kinds {
		m := rp.med[k]
		if strings.HasSuffix(k, "-https") {
			continue // their own table below: another web, another oracle
		}
		if m.n == 0 {
			w("| %s | 0 | failed | | | | | | | | |\n", kindNames[k])
			continue
		}
		w("| %s | %d | %.0f | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", kindNames[k], m.n, m.pps, m.cpu, m.srv, mib(m.rss), m.rssURL,
			m.distinct, m.missing, m.extra, m.twice)
	}
}

// writeRatios writes the ratios of the medians.
func (rp *report) writeRatios(b *bytes.Buffer) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("\nMedians over the successful runs. ")
	s, c, cl, col := rp.med["sextant"], rp.med["ceiling"], rp.med["cluster"], rp.med["colly"]
	w("Ratios of medians: Sextant ÷ ceiling **%.2f** in pages/s, %.2f in CPU per page; Sextant ÷ colly **%.2f** in pages/s, %.2f in CPU per page, **%.2f** in RSS per URL; ",
		ratio(s.pps, c.pps), ratio(s.cpu, c.cpu), ratio(s.pps, col.pps), ratio(s.cpu, col.cpu), ratio(s.rssURL, col.rssURL))
	w("3-node cluster ÷ single node %.2f in pages/s (three nodes sharing the same 2 cores).", ratio(cl.pps, s.pps))
	if f0 := rp.med["sextant-f0"]; f0.n > 0 {
		w(" Without the politeness factor (`--factor 0`, the setting colly and the ceiling have): Sextant ÷ ceiling **%.2f**, ÷ colly %.2f in pages/s.",
			ratio(f0.pps, c.pps), ratio(f0.pps, col.pps))
	}
	for _, k := range []string{"scrapy", "wget2"} {
		if p := rp.med[k]; p.n > 0 {
			w(" Sextant ÷ %s: **%.2f** in pages/s, %.2f in CPU per page, %.2f in RSS per URL.", k, ratio(s.pps, p.pps), ratio(s.cpu, p.cpu), ratio(s.rssURL, p.rssURL))
		}
	}
	w("\n\n")
}

func (rp *report) writeTargets(b *bytes.Buffer) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("### Targets\n\n| target | measured | wanted | |\n|---|---:|---|---|\n")
	for _, t := range rp.targets {
		st := "not met"
		if !t.ok {
			st = "not measured"
		} else if t.met {
			st = "**met**"
		}
		w("| %s | %.2f | %s | %s |\n", t.what, t.value, t.want, st)
	}
	if !rp.allMet() {
		w("\nWhere a target is not met, docs/bench/peers.md explains the gap with a CPU profile (this run's profile is at the end of this section).\n")
	}
}

// writeTraffic writes the 3-node cluster's cross-machine traffic.
func (rp *report) writeTraffic(b *bytes.Buffer) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	cl := rp.med["cluster"]
	if cl.n > 0 {
		w("\n### Cross-machine traffic (3-node cluster, per-peer CLOCK cache of 4,096 entries — the node default)\n\n")
		w("- traffic reduction (1 − URLs sent ÷ URLs routed to peers): **%.1f%%** (median)\n", 100*cl.reduction)
		w("- bytes on the wire per cross URL sent: **%.1f B** (%.0f%% of the raw URL bytes)\n", cl.wirePerURL, 100*cl.wireRatio)
		var last *result
		for i := range rp.Runs {
			if r := &rp.Runs[i]; r.Kind == "cluster" && r.Err == "" {
				last = r
			}
		}
		if last != nil && len(last.PeerAdvice) > 0 {
			w("- Recommended per-peer cache size, from each node's live miss-ratio curve of its per-peer caches (status page `/status.json`, SHARDS sampling, CLOCK; last cluster run). ")
			w("The traffic reduction at the recommended size is the curve's **prediction** (1 − miss ratio at that size), not a measured crawl:\n\n")
			w("| node | now: entries per peer | predicted miss now | knee: entries per peer | predicted miss at the knee → reduction | 20%% miss at (per peer) |\n|---|---:|---:|---:|---:|---:|\n")
			for _, a := range last.PeerAdvice {
				k20 := "not reached"
				if a.Reached20 {
					k20 = fmt.Sprintf("%d", a.K20PerWorker)
				}
				w("| %s | %d | %.3f | %d | %.3f → **%.1f%%** | %s |\n", a.Node, a.CurrentPerWorker, a.CurrentMiss, a.KneePerWorker, a.KneeMiss, 100*(1-a.KneeMiss), k20)
			}
			w("\nThe measured reduction above also counts batch deduplication, so it can exceed 1 − the predicted miss ratio at the same size.\n")
		} else {
			w("- No sizing advice was read from the nodes' status pages (curve not ready or the page not reachable).\n")
		}
	}

}

func (rp *report) writeRunList(b *bytes.Buffer) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("\n### Every run, in order\n\n| round | contender | wall s | pages | pages/s | CPU s | simweb CPU s | peak RSS MiB | distinct | missing | extra | twice | off-web | load after | error |\n")
	w("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, r := range rp.Runs {
		e := r.Err
		if len(r.MissingEx) > 0 {
			e += " missing e.g. " + strings.Join(r.MissingEx, " ")
		}
		if len(r.ExtraEx) > 0 {
			e += " extra e.g. " + strings.Join(r.ExtraEx, " ")
		}
		w("| %d | %s | %.1f | %d | %.0f | %.1f | %.1f | %.0f | %d | %d | %d | %d | %d | %s | %s |\n", r.Rep, r.Kind, r.Wall, r.Pages, r.pagesPerSec(),
			r.CPU, r.SrvCPU, mib(float64(r.MaxRSS)), r.Distinct, r.Missing, r.Extra, r.FetchedTwice, r.OffWeb, r.Load, strings.ReplaceAll(e, "|", "\\|"))
	}
	for _, n := range rp.Notes {
		w("\nNote: %s\n", n)
	}

}

func (rp *report) writeQuick(b *bytes.Buffer) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("\n### Package benchmarks at a quick scale (re-measured by this run)\n\n")
	if len(rp.Quick) == 0 {
		w("Not run (`-quick=false` or interrupted).\n")
	}
	for _, q := range rp.Quick {
		w("- **%s** — `%s` (%.0f s wall", q.Name, q.Command, q.Wall)
		if q.CPU > 0 {
			w(", %.0f s CPU, peak RSS %.0f MiB", q.CPU, mib(float64(q.MaxRSS)))
		}
		w(")")
		if q.Err != "" {
			w(": **failed**: `%s`\n", strings.ReplaceAll(q.Err, "\n", " "))
			continue
		}
		w("\n")
		for _, l := range q.Lines {
			w("  - `%s`: %s\n", l.Name, fmtMetrics(l.Metrics))
		}
		if q.Output != "" {
			w("\n```\n%s\n```\n", q.Output)
		}
	}
}

func (rp *report) writeCitedAndProfile(b *bytes.Buffer) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("\n### Big-scale figures (NOT re-measured by `make bench`; from docs/bench/*.md, same machine, 2026-11-22)\n\n")
	w("| figure | value | command |\n|---|---|---|\n")
	for _, c := range cited {
		w("| %s | %s | `%s` |\n", c[0], c[1], c[2])
	}
	if p := rp.Profile; p != nil {
		w("\n### CPU profile of a Sextant crawl of this web\n\n")
		w("`crawler crawl` has no profiling flag and the harness adds none to the product: bench/cmd/sextantprof runs the same crawl.Node with the same flags (nodeflags.Add in cmd/crawler) under pprof, against the same simweb, after the timed runs (%.0f s wall, %.0f s CPU, with the profiler on). Command: `%s`.\n\n", p.Wall, p.CPU, p.Command)
		if p.Err != "" {
			w("Failed: `%s`\n", strings.ReplaceAll(p.Err, "\n", " "))
		} else {
			w("`%s`\n\n```\n%s\n```\n\n```\n%s\n```\n", strings.TrimSpace(p.Result), strings.TrimSpace(p.Flat), strings.TrimSpace(p.Cum))
		}
	}
}

func fmtMetrics(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		if k == "ns/op" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%.4g %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// cited are the big-scale figures of docs/bench/*.md.
var cited = [][3]string{
	{"DUE checks/s at 10⁸ distinct URLs (6×10⁸ candidates)", "2,055,341 wall on a machine idle at the start (Go map 1,642,882 in the same run; 813,578 vs the map's 875,108 under full load); 493 CPU-ns per check; 0.31 B heap / 0.88 B peak RAM per URL; 4.999 disk B per URL (docs/bench/due.md, runs C and E)",
		"SEXTANT_LONG=1 DUE_BENCH_SCALES=1e8 DUE_BENCH_SKIP_pebble=1 go test ./due -run XXX -bench SeenSet -benchtime=1x -timeout 3h"},
	{"cache lookup, CLOCK / RANDOM at k = 2^16", "CLOCK miss 18.20 cpu-ns, 0.89× the branchless code (dcf73be) in the same alternated runs (20.37); CLOCK hit 12.32; RANDOM 11.95 hit / 11.45 miss (2026-11-24 17:05, 2.6 GHz AMD host, load ≤ 1.3). On the faster 14:40 host (AMD, 1 MiB L2): CLOCK miss 15.13, RANDOM 8.39; on the 19:00 Intel host CLOCK miss 14.91–15.40, and 14.48–15.54 after b2 came from h·nb's low word (dca4f88: 0.97× the old code alternated, RANDOM miss 8.37, 0.93×). 8.92 / 8.40 B per entry. LRU ÷ CLOCK in the same runs (19:00, LRU over the bucket table): hits 1.68 / 1.64 / 1.88 / 1.37×, misses 0.93 / 1.31 / 1.65 / 0.49× at k = 2^10 / 2^16 / 2^20 / 2^25 (docs/bench/cache.md). 20:40–21:45, the 2.6 GHz Zen 4 host again: CLOCK miss 18.2–18.5 at eb40375, **17.0–17.4** after far victims by words (f99fb81) and no bounds checks in Seen (4c6d704), 0.92–0.95× alternated; without the mispredicted branch a miss through the hand still costs ~17 there (timing-only builds, docs/bench/cache.md).",
		`go test ./cache -run '^$' -bench 'Lookup/(gomap|clock|random|lru)/k=2\^(10|16|20|25)/' -benchtime 2000000x -count 3`},
	{"cachesim full sweep, 10⁸ requests, 6 algorithms × 26 sizes", "1 min 18 s wall, 144 s CPU, peak RSS 2.91 GiB (2026-11-24 19:55, Intel host, load 1–2, code dca4f88; a52a581 right after: 1 min 18 s, 147 s). 1 min 33 s wall, 173 s CPU, peak RSS 2.91 GiB (2026-11-24 18:17, 2.6 GHz AMD host, load ≈ 1, code 628df9b; 2 min 15 s / 209 s before the Robin Hood table's home fix on the same trace, and dcf73be 2 min 19 s / 218 s; identical miss counts; docs/bench/cache.md)",
		"crawler cachesim --trace trace1e8.sxt --workers 500 --out OUT"},
	{"demo cluster (3 nodes, default web with pathologies)", "673–767 pages/s; cross-machine traffic −80.5%; 7.3–7.5 wire B per URL sent (22–23% of raw, spooled batches coalesced on the wire; 14.4–14.5 B, 43–44%, without) (README, docs/bench/crawl.md, docs/bench/hostsplit.md)",
		"go run ./cmd/crawler demo"},
	{"host splitter codec, wire ÷ raw URL bytes (zstd, 1,000-URL batches)", "16.6% (simweb URLs), 11.3% (wiki mirror links) (docs/bench/hostsplit.md)",
		"go test -run '^$' -bench WireSize ./hostsplit"},
}

// writeHTTPS writes the HTTPS row: the same contenders on the same web
// with the presets' HTTPS hosts (a second simweb process), so that the
// ratio prices what TLS costs Sextant beyond what it costs any client.
func (rp *report) writeHTTPS(b *bytes.Buffer) {
	sh, ch := rp.med["sextant-https"], rp.med["ceiling-https"]
	if rp.WebHTTPS == "" {
		return
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("### HTTPS (issue 24)\n\n")
	w("- **Web**: %s; certificates from the CA simweb makes at start (`--ca-out`), trusted by both (`--ca-file`). ", rp.WebHTTPS)
	w("Links to HTTPS hosts are https; a share of links to the hosts that redirect http→https are http:// (a 301 each, in the oracle's set).\n")
	w("- Same settings as above; the TLS ceiling fetches the oracle's list over TLS with Go's net/http (HTTP/2 where a host offers it by ALPN, one connection per host) with no politeness delay; Sextant keeps its default politeness factor, and the `--factor 0` row (`sextant-f0-https`) has none, like the ceiling: the like-for-like row.\n\n")
	w("| contender | runs | pages/s | ÷ TLS ceiling (target %s) | CPU s per 1,000 pages | simweb CPU s per 1,000 pages | peak RSS MiB | distinct URLs (oracle %d) | missing | extra | fetched twice |\n", httpsTargetWant, rp.OracleHTTPS)
	w("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range []string{"ceiling-https", "sextant-https", "sextant-f0-https"} {
		m := rp.med[k]
		if !rp.ran(k) {
			continue
		}
		if m.n == 0 {
			w("| %s | 0 | failed | | | | | | | | |\n", kindNames[k])
			continue
		}
		vs := ""
		if t, ok := rp.httpsTargetOf(k); ok {
			vs = fmt.Sprintf("%.2f, not measured", t.value)
			if t.ok {
				vs = fmt.Sprintf("**%.2f**, not met", t.value)
			}
			if t.met {
				vs = fmt.Sprintf("**%.2f**, met", t.value)
			}
		}
		w("| %s | %d | %.0f | %s | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", kindNames[k], m.n, m.pps, vs, m.cpu, m.srv, mib(m.rss),
			m.distinct, m.missing, m.extra, m.twice)
	}
	w("\nSextant ÷ TLS ceiling **%.2f** in pages/s, %.2f in CPU per page", ratio(sh.pps, ch.pps), ratio(sh.cpu, ch.cpu))
	if f0 := rp.med["sextant-f0-https"]; f0.n > 0 {
		w("; without the politeness factor (`--factor 0`) **%.2f** in pages/s", ratio(f0.pps, ch.pps))
	}
	if s, c := rp.med["sextant"], rp.med["ceiling"]; s.n > 0 && c.n > 0 && sh.n > 0 && ch.n > 0 {
		w("; TLS costs the ceiling %.2f× and Sextant %.2f× the CPU per page of plain HTTP", ratio(ch.cpu, c.cpu), ratio(sh.cpu, s.cpu))
	}
	w(".\n\n")
}
