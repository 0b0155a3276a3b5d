// Command scale runs the 10⁷-page crawl of issue 29 on one node (make scale):
// a `crawler simweb --preset scale` process serves the web, `crawler crawl`
// crawls it to the end, a sampler writes every few seconds the crawl's
// pages, rate, RSS, Go heap and frontier and DUE bytes on disk to a CSV,
// and afterwards the web's streaming oracle (simweb.StreamOracle) is
// computed and compared, both sorted on disk, with the URLs of the crawl
// log. It renders the samples as plots and writes a report with the
// targets (wall ≤ 1 h, peak RSS ≤ 400 MB, RSS flat over the last 90%,
// pages/s of the last 10% ≥ 0.9 × the first 10% after warm-up, the
// fetched set equal to the oracle's), optionally spliced into
// BENCHMARKS.md. See docs/bench/scale.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sextant-crawler/sextant/simweb"
)

// options are the command's flags.
type options struct {
	out       string        // output directory: samples.csv, plots, report.md, data/
	root      string        // the repository (to build the crawler)
	crawler   string        // a built crawler binary ("": build one into out)
	hosts     int           // hosts of the scale web (10⁵: ≈ 10⁷ URLs)
	workers   int           // crawl --workers
	every     time.Duration // sampling interval
	oracle    string        // a sorted oracle file computed before ("": compute it)
	benchMD   string        // splice the report into this BENCHMARKS.md ("": don't)
	figs      string        // also write the plots here (the report links them there)
	maxWall   time.Duration // stop the crawl after this long (0: no limit)
	crawlArgs []string      // extra crawl flags (after --)
	only      string        // "oracle" or "check": that step alone (see -only)
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "scale-out", "output directory (samples.csv, scale-*.svg/png, report.md, the crawl's data/)")
	flag.StringVar(&o.root, "root", "..", "the repository root (the crawler is built from it)")
	flag.StringVar(&o.crawler, "crawler", "", "crawler binary to run (default: build one from -root into -out)")
	flag.IntVar(&o.hosts, "hosts", 100_000, "hosts of the scale web (10⁵ ≈ 10⁷ URLs; 10⁴ ≈ 10⁶)")
	flag.IntVar(&o.workers, "workers", 64, "crawl --workers")
	flag.DurationVar(&o.every, "every", 5*time.Second, "sampling interval")
	flag.StringVar(&o.oracle, "oracle", "", "sorted oracle file of this web from an earlier run (default: compute it after the crawl)")
	flag.StringVar(&o.benchMD, "bench-md", "", "also replace the make-scale section of this BENCHMARKS.md")
	flag.StringVar(&o.figs, "figs", "", "also write the plots into this directory, and link them from there in the report (e.g. ../docs/bench/scale)")
	flag.DurationVar(&o.maxWall, "max-wall", 0, "stop the crawl after this long (0: run to the end)")
	flag.StringVar(&o.only, "only", "", "oracle: only compute the web's streaming oracle into OUT/oracle.txt; check: only compare OUT/data/crawl.log with the oracle (-oracle or computed); report: only the plots (-figs) of OUT/samples.csv and the report — OUT/report.md if the run ended, else partial figures of a crawl still running — spliced into -bench-md if given")
	flag.Parse()
	o.crawlArgs = flag.Args()
	if o.only != "" {
		if err := runOnly(o); err != nil {
			fmt.Fprintln(os.Stderr, "scale:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	res, err := run(ctx, o, log)
	if res != nil {
		fmt.Print(res.markdown())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// run does the whole benchmark; the result is returned, as far as it got,
// with any error.
func run(ctx context.Context, o options, log *slog.Logger) (*result, error) {
	if o.hosts < 1 || o.workers < 1 || o.every <= 0 {
		return nil, errors.New("-hosts, -workers and -every must be positive")
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return nil, err
	}
	o.out = out
	if o.crawler == "" {
		if o.crawler, err = buildCrawler(ctx, o.root, filepath.Join(o.out, "crawler")); err != nil {
			return nil, err
		}
	}
	res := &result{opts: o, started: time.Now().UTC(), loadBefore: loadavg()}
	web, err := startWeb(ctx, o)
	if err != nil {
		return nil, err
	}
	res.web = web.describe()
	log.Info("simweb serving", "addr", web.addr, "hosts", o.hosts, "articles", web.web.Pages())
	cr, err := startCrawl(ctx, o, web)
	if err != nil {
		web.close()
		return res, err
	}
	res.command = cr.command
	log.Info("crawl started", "pid", cr.cmd.Process.Pid, "metrics", cr.metrics)
	samples, wall, crawlErr := sampleUntilDone(ctx, o, cr, web, log)
	res.samples, res.wall = samples, wall
	res.simwebCPU = web.cpu()
	web.close()
	res.loadAfter = loadavg()
	res.analyze()
	if err := writeCSV(filepath.Join(o.out, "samples.csv"), samples); err != nil {
		return res, err
	}
	for _, dir := range []string{o.out, o.figs} {
		if dir == "" {
			continue
		}
		if err := plotSamples(dir, samples); err != nil {
			return res, err
		}
	}
	if crawlErr != nil {
		res.crawlErr = crawlErr.Error()
		log.Error("crawl failed", "err", crawlErr)
	} else {
		log.Info("crawl done; checking against the oracle", "wall_s", int(res.wall))
		res.check, err = checkAgainstOracle(o, web.web, filepath.Join(o.out, "data", "crawl.log"))
		if err != nil {
			res.crawlErr = "oracle check: " + err.Error()
		}
	}
	if err := res.write(filepath.Join(o.out, "report.md")); err != nil {
		return res, err
	}
	if o.benchMD != "" {
		if err := spliceBenchmarks(o.benchMD, res.markdown()); err != nil {
			return res, err
		}
	}
	if res.crawlErr != "" {
		return res, errors.New(res.crawlErr)
	}
	return res, nil
}

// runOnly runs one step of the benchmark alone (-only), e.g. to compute a
// big web's oracle ahead of its crawl or to check a crawl log again.
func runOnly(o options) error {
	web, err := simweb.New(scaleConfig(o.hosts))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	switch o.only {
	case "oracle":
		path := filepath.Join(o.out, "oracle.txt")
		t0, cpu0 := time.Now(), selfCPU()
		res, err := web.StreamOracle(web.Seeds(), simweb.Rules{}, o.out, path)
		if err != nil {
			return err
		}
		fmt.Printf("oracle of %d hosts: %d URLs, %d levels, largest host %d URLs, %d disallowed, %d out of scope; %.0f s wall, %.0f s CPU, peak RSS %s; written to %s\n",
			o.hosts, res.Fetched, res.Levels, res.MaxHostURLs, res.Disallowed, res.OutOfScope, time.Since(t0).Seconds(), selfCPU()-cpu0, mb(selfMaxRSS()), path)
		return nil
	case "report":
		samples, err := readCSV(filepath.Join(o.out, "samples.csv"))
		if err != nil {
			return err
		}
		r := &result{opts: o, samples: samples, started: time.Now().UTC(), loadBefore: "?", loadAfter: loadavg(),
			web: (&webProc{web: web}).describe(), command: "see " + filepath.Join(o.out, "crawl.out"),
			crawlErr: "partial figures: the samples of a crawl that had not finished (" + filepath.Join(o.out, "samples.csv") + ")"}
		if len(samples) > 0 {
			r.wall = samples[len(samples)-1].Elapsed
		}
		r.analyze()
		if o.figs != "" {
			if err := plotSamples(o.figs, samples); err != nil {
				return err
			}
		}
		md := r.markdown()
		if b, err := os.ReadFile(filepath.Join(o.out, "report.md")); err == nil {
			md = string(b) // the run ended: its own report (figures, oracle check)
		}
		fmt.Print(md)
		if o.benchMD != "" {
			return spliceBenchmarks(o.benchMD, md)
		}
		return nil
	case "check":
		c, err := checkAgainstOracle(o, web, filepath.Join(o.out, "data", "crawl.log"))
		if err != nil {
			return err
		}
		fmt.Printf("%s; equal: %v; e.g. %v\n", c.summary(), c.Equal(), c.Examples)
		return nil
	}
	return fmt.Errorf("-only %q: want oracle, check or report", o.only)
}
