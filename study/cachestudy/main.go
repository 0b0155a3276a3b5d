// Command cachestudy regenerates the figures of docs/caching-study.md that
// `crawler cachesim` does not draw by itself:
//
//	cachestudy perworker --trace T --out DIR   W per-worker caches of k/W vs one cache of k
//	                                           (worker-tagged traces from study/tracecrawl)
//	cachestudy order --order bfs|inlinks|random --out T.trace [--hosts H --pages P]
//	                                           an offline crawl of simweb in that order → trace
//	cachestudy dispatch --out DIR [--workers 32 --ks ...]
//	                                           per-worker caches under host-affine vs round-robin
//	                                           dispatch vs one global cache (issue 30)
//	cachestudy plot --out DIR --algo A LABEL=results.csv ...
//	                                           one algorithm's curve from several cachesim runs
//
// study/run.sh runs everything in order.
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/sextant-crawler/sextant/cache/cacheplot"
	"github.com/sextant-crawler/sextant/cache/cachesim"
	"github.com/sextant-crawler/sextant/simweb"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cachestudy perworker|order|dispatch|plot [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "perworker":
		err = cmdPerWorker(ctx, os.Args[2:])
	case "order":
		err = cmdOrder(os.Args[2:])
	case "plot":
		err = cmdPlot(os.Args[2:])
	case "dispatch":
		err = cmdDispatch(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachestudy:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func cmdPerWorker(ctx context.Context, args []string) error {
	f := flag.NewFlagSet("perworker", flag.ExitOnError)
	trace := f.String("trace", "", "worker-tagged trace (study/tracecrawl)")
	crawlW := f.Int("crawl-workers", 32, "workers per node of the crawl that wrote the trace")
	wsS := f.String("ws", "1,8,32,64,500", "numbers of per-worker caches W")
	algosS := f.String("algos", "clock", "online algorithms")
	kmin := f.Int("kmin", 0, "smallest total size, power of two")
	kmax := f.Int("kmax", 25, "largest total size, power of two")
	procs := f.Int("procs", 2, "replays in parallel")
	out := f.String("out", "", "output directory (perworker.csv, missrate.{png,svg})")
	title := f.String("title", "", "plot title")
	_ = f.Parse(args)
	if *trace == "" || *out == "" {
		return fmt.Errorf("perworker: --trace and --out are required")
	}
	ws, err := ints(*wsS)
	if err != nil {
		return err
	}
	algos := strings.Split(*algosS, ",")
	t, err := ReadTagged(*trace, *crawlW)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d records, %d real workers\n", *trace, len(t.FPs), 1<<t.WBits)
	res, err := PerWorkerStudy(ctx, t, algos, ws, cachesim.PowersOfTwo(*kmin, *kmax), *procs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	fh, err := os.Create(filepath.Join(*out, "perworker.csv"))
	if err != nil {
		return err
	}
	cw := csv.NewWriter(fh)
	_ = cw.Write([]string{"algorithm", "workers", "assignment", "k_total", "k_per_worker", "requests", "misses", "miss_rate"})
	var pts []cachesim.Result
	for _, r := range res {
		_ = cw.Write([]string{r.Algo, strconv.Itoa(r.Workers), r.Assignment, strconv.Itoa(r.KTotal), strconv.Itoa(r.KPer),
			strconv.FormatUint(r.Requests, 10), strconv.FormatUint(r.Misses, 10), strconv.FormatFloat(r.MissRate, 'f', 6, 64)})
		label := fmt.Sprintf("%s W=%d", r.Algo, r.Workers)
		if r.Sharded {
			label = r.Algo + " shared (64 shards)"
		}
		pts = append(pts, cachesim.Result{Algo: label, K: r.KTotal, Requests: r.Requests, Misses: r.Misses, MissRate: r.MissRate, RelMin: math.NaN()})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].Algo < pts[j].Algo })
	if *title == "" {
		*title = "W per-worker caches of k/W entries vs one cache of k: " + filepath.Base(*trace)
	}
	_, err = cacheplot.Write(*out, pts, *title)
	return err
}

func cmdOrder(args []string) error {
	f := flag.NewFlagSet("order", flag.ExitOnError)
	hosts := f.Int("hosts", 2000, "simweb hosts")
	pages := f.Int("pages", 100000, "simweb articles, spread over --hosts")
	seed := f.Uint64("seed", 0, "simweb seed")
	order := f.String("order", OrderBFS, "crawl order: bfs, inlinks or random")
	maxPages := f.Int("max-pages", 0, "stop after this many fetches (0: all)")
	polite := f.Int("polite", 0, "politeness gap: a host is fetched again only this many fetches after its last (0: none)")
	nav := f.Int("nav-links", 0, "simweb Config.NavLinks")
	dead := f.Float64("dead-links", 0, "simweb Config.DeadLinkShare")
	lmed := f.Float64("links-median", 0, "simweb Config.LinksMedian (0: default 23)")
	lmean := f.Float64("links-mean", 0, "simweb Config.LinksMean (0: default 60)")
	maxArticles := f.Int("max-pages-per-host", 0, "simweb Config.MaxPagesPerHost (0: default 500)")
	out := f.String("out", "", "trace file to write")
	stats := f.String("stats", "", "also write the crawl's counts to this JSON file")
	_ = f.Parse(args)
	if *out == "" {
		return fmt.Errorf("order: --out is required")
	}
	cfg := simweb.DefaultConfig()
	cfg.Seed = *seed
	cfg.Hosts = *hosts
	cfg.PagesPerHost = float64(*pages) / float64(*hosts)
	cfg.NoPathologies = true
	cfg.NavLinks = *nav
	cfg.DeadLinkShare = *dead
	if *lmed > 0 {
		cfg.LinksMedian, cfg.LinksMean = *lmed, *lmean
	}
	cfg.MaxPagesPerHost = *maxArticles
	web, err := simweb.New(cfg)
	if err != nil {
		return err
	}
	fh, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer fh.Close()
	tw, err := cachesim.NewTraceWriter(fh)
	if err != nil {
		return err
	}
	sink := &traceSink{w: tw}
	st, err := EmulateCrawl(web, EmulateOptions{Order: *order, MaxPages: *maxPages, Seed: 1, Polite: *polite}, sink.add)
	if err != nil {
		return err
	}
	if sink.err != nil {
		return sink.err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	fmt.Printf("%s order (polite %d): %d pages fetched, %d links logged, %d distinct URLs, %.2f pages per host run, %d idle → %s\n",
		*order, *polite, st.Pages, st.Links, st.Distinct, float64(st.Pages)/float64(max(st.HostRuns, 1)), st.Idle, *out)
	if *stats != "" {
		if err := writeStats(*stats, st); err != nil {
			return err
		}
	}
	return fh.Close()
}

// cmdPlot draws one algorithm's curve from several cachesim results.csv
// files, each given as LABEL=PATH.
func cmdPlot(args []string) error {
	f := flag.NewFlagSet("plot", flag.ExitOnError)
	algo := f.String("algo", "lru", "algorithm whose curve is drawn")
	out := f.String("out", "", "output directory")
	title := f.String("title", "", "plot title")
	_ = f.Parse(args)
	if *out == "" || f.NArg() == 0 {
		return fmt.Errorf("plot: --out and LABEL=results.csv arguments are required")
	}
	var pts []cachesim.Result
	for _, a := range f.Args() {
		label, path, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("plot: %q is not LABEL=PATH", a)
		}
		rs, err := readResults(path)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Algo == *algo {
				r.Algo = label
				pts = append(pts, r)
			}
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	_, err := cacheplot.Write(*out, pts, *title)
	return err
}

// readResults reads a results.csv written by `crawler cachesim`.
func readResults(path string) ([]cachesim.Result, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []cachesim.Result
	for i, row := range rows {
		if i == 0 || len(row) < 6 {
			continue
		}
		k, _ := strconv.Atoi(row[1])
		req, _ := strconv.ParseUint(row[2], 10, 64)
		mis, _ := strconv.ParseUint(row[3], 10, 64)
		mr, _ := strconv.ParseFloat(row[4], 64)
		rel := math.NaN()
		if row[5] != "" {
			rel, _ = strconv.ParseFloat(row[5], 64)
		}
		out = append(out, cachesim.Result{Algo: row[0], K: k, Requests: req, Misses: mis, MissRate: mr, RelMin: rel})
	}
	return out, nil
}

// writeStats writes an emulated crawl's counts as JSON, for the study's
// document (study/studydoc).
func writeStats(path string, st EmulateStats) error {
	b, err := json.MarshalIndent(map[string]any{
		"pages": st.Pages, "links": st.Links, "distinct": st.Distinct, "host_runs": st.HostRuns,
		"pages_per_host_run": float64(st.Pages) / float64(max(st.HostRuns, 1)), "idle": st.Idle,
	}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
