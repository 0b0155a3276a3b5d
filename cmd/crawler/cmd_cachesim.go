package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/cache/cacheplot"
	"github.com/sextant-crawler/sextant/cache/cachesim"
	"github.com/sextant-crawler/sextant/cache/tracegen"
)

func init() {
	register(&command{name: "cachesim", summary: "simulate URL caches over a fingerprint trace and recommend a size", run: runCachesim})
}

func runCachesim(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "cachesim", `(--trace FILE | --urls FILE | --gen zipf --n N) [flags]

Replays a trace of URL fingerprints (as logged by the host splitter, or a text
file of normalised URLs, one per line, or a synthetic Zipf + recency stream)
through every cache algorithm at every size k = 2^kmin … 2^kmax. Writes
results.csv and the plots missrate.{png,svg} and relmin.{png,svg} to --out, and
prints the operator's answer: the smallest k (total and per worker) within one
point of the curve's floor, and the k that reaches the target miss rate.
With --write-trace the generated stream is saved as a trace file instead.`)
	trace := f.String("trace", "", "binary fingerprint trace file")
	urls := f.String("urls", "", "text file of normalised URLs, one per line")
	gen := f.String("gen", "", "generate a synthetic trace: zipf (Zipf popularity + recency locality)")
	n := f.Int64("n", 10_000_000, "requests to generate with --gen")
	seed := f.Uint64("seed", 1, "seed of the generator and of RANDOM")
	writeTrace := f.String("write-trace", "", "with --gen: write the generated trace to this file and stop")
	algos := f.String("algos", strings.Join(cachesim.Algorithms, ","), "algorithms to simulate (comma-separated, or all); also clock-exact and clock-exact-marked (textbook CLOCK, new entries unmarked or marked)")
	kmin := f.Int("kmin", 0, "smallest cache size, as a power of two")
	kmax := f.Int("kmax", 25, "largest cache size, as a power of two")
	workers := f.Int("workers", 1, "crawl workers sharing the total (for the per-worker size)")
	procs := f.Int("procs", runtime.GOMAXPROCS(0), "simulations run in parallel")
	out := f.String("out", "cachesim-out", "directory for results.csv and the plots")
	charge := f.Bool("charge-static", false, "count STATIC's initial load as misses")
	target := f.Float64("target", cachesim.TargetMissRate, "target miss rate for the recommendation")
	noPlots := f.Bool("no-plots", false, "skip the PNG/SVG plots")
	sample := f.Float64("sample", 0, "approximate: simulate this fraction (0,1) of the fingerprint space with caches scaled alike (SHARDS); 0 = exact")
	if err := f.parse(args); err != nil {
		return err
	}
	sources := 0
	for _, s := range []string{*trace, *urls, *gen} {
		if s != "" {
			sources++
		}
	}
	switch {
	case sources != 1:
		return usagef("give exactly one of --trace, --urls, --gen")
	case *gen != "" && *gen != "zipf":
		return usagef("unknown generator %q (want zipf)", *gen)
	case *gen != "" && (*n < 1 || *n >= 1<<32-1):
		return usagef("--n %d out of range", *n)
	case *writeTrace != "" && *gen == "":
		return usagef("--write-trace needs --gen")
	case *kmin < 0 || *kmax > 40 || *kmin > *kmax:
		return usagef("need 0 ≤ kmin ≤ kmax ≤ 40")
	case *workers < 1 || *procs < 1:
		return usagef("--workers and --procs must be ≥ 1")
	case *target <= 0 || *target >= 1:
		return usagef("--target must be in (0,1)")
	case *sample < 0 || *sample >= 1:
		return usagef("--sample must be in [0,1)")
	}
	list, err := cachesim.ParseAlgos(*algos)
	if err != nil {
		return usagef("%v", err)
	}
	if *gen != "" && *writeTrace != "" {
		return generateTrace(env, *writeTrace, *n, *seed)
	}

	start := time.Now()
	fps, err := loadTrace(*trace, *urls, *gen, *n, *seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "trace: %d requests, loaded in %s\n", len(fps), time.Since(start).Round(time.Millisecond))
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}

	opts := cachesim.SimOptions{Algos: list, Ks: cachesim.PowersOfTwo(*kmin, *kmax), Procs: *procs, Seed: *seed, ChargeStaticLoad: *charge, SampleRate: *sample}
	prog := newSimProgress(env.stderr)
	opts.Progress = prog.update
	simStart := time.Now()
	results, err := cachesim.Simulate(ctx, fps, opts)
	prog.stop()
	if err != nil {
		return err
	}
	simTime := time.Since(simStart)

	csvPath := filepath.Join(*out, "results.csv")
	if err := writeResultsCSV(csvPath, results); err != nil {
		return err
	}
	files := []string{csvPath}
	if !*noPlots {
		title := fmt.Sprintf("%s: %d requests", traceName(*trace, *urls, *gen), len(fps))
		plots, err := cacheplot.Write(*out, results, title)
		if err != nil {
			return err
		}
		files = append(files, plots...)
	}
	distinct := uint64(0)
	for _, r := range results {
		if r.Algo == cache.AlgoInfinite {
			distinct = r.Misses
		}
	}
	fmt.Fprintf(env.stdout, "simulated %d algorithms × %d sizes in %s on %d goroutines; peak RSS %s\n",
		len(list), *kmax-*kmin+1, simTime.Round(time.Millisecond), *procs, peakRSS())
	if *sample > 0 {
		fmt.Fprintf(env.stdout, "APPROXIMATE: sampled %.4g of the fingerprint space; sizes below ~%d are unreliable\n", *sample, int(100 / *sample))
	}
	if distinct > 0 {
		fmt.Fprintf(env.stdout, "distinct fingerprints: %d (INFINITE miss rate %.2f%%)\n", distinct, 100*float64(distinct)/float64(max(len(fps), 1)))
	}
	fmt.Fprintf(env.stdout, "recommendation (%d workers, target %.0f%%):\n", *workers, 100**target)
	for _, a := range []string{cache.AlgoClock, cache.AlgoRandom, cache.AlgoLRU} {
		if rec, ok := cachesim.Recommend(results, a, *workers, *target); ok {
			fmt.Fprintf(env.stdout, "  %s\n", rec)
		}
	}
	fmt.Fprintf(env.stdout, "wrote %s\n", strings.Join(files, ", "))
	return nil
}

func traceName(trace, urls, gen string) string {
	switch {
	case trace != "":
		return filepath.Base(trace)
	case urls != "":
		return filepath.Base(urls)
	}
	return "synthetic " + gen
}

func loadTrace(trace, urls, gen string, n int64, seed uint64) ([]uint64, error) {
	switch {
	case trace != "":
		return cachesim.ReadTraceFile(trace)
	case urls != "":
		fh, err := os.Open(urls)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		return cachesim.FingerprintURLs(fh)
	}
	return tracegen.Generate(tracegen.Options{Seed: seed}, int(n))
}

func generateTrace(env *cmdEnv, path string, n int64, seed uint64) error {
	g, err := tracegen.New(tracegen.Options{Seed: seed})
	if err != nil {
		return err
	}
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := cachesim.NewTraceWriter(fh)
	if err != nil {
		fh.Close()
		return err
	}
	for i := int64(0); i < n; i++ {
		if err := w.Add(g.Next()); err != nil {
			fh.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "wrote %s: %d requests, %d bytes (%.2f bytes/request)\n", path, n, st.Size(), float64(st.Size())/float64(n))
	return nil
}

func writeResultsCSV(path string, results []cachesim.Result) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := cachesim.WriteCSV(fh, results); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

func peakRSS() string {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1f MiB", float64(ru.Maxrss)/1024) // Linux reports KiB
}

// simProgress shows Simulate's progress: a progress bar when stderr is a
// terminal, a log line every 10 s otherwise. update may be called from many
// goroutines; a single goroutine draws.
type simProgress struct {
	done, total atomic.Int64
	quit        chan struct{}
	wg          sync.WaitGroup
}

func newSimProgress(w io.Writer) *simProgress {
	p := &simProgress{quit: make(chan struct{})}
	tty := false
	if fh, ok := w.(*os.File); ok {
		if st, err := fh.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	p.wg.Add(1)
	go p.draw(w, tty)
	return p
}

func (p *simProgress) update(done, total int64) {
	p.total.Store(total)
	for {
		old := p.done.Load()
		if done <= old || p.done.CompareAndSwap(old, done) {
			return
		}
	}
}

func (p *simProgress) draw(w io.Writer, tty bool) {
	defer p.wg.Done()
	every := 10 * time.Second
	var bar *progressbar.ProgressBar
	if tty {
		every = 200 * time.Millisecond
	}
	start := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			if bar != nil {
				_ = bar.Set64(p.total.Load())
				_ = bar.Finish()
				fmt.Fprintln(w)
			}
			return
		case <-t.C:
		}
		done, total := p.done.Load(), p.total.Load()
		if total == 0 {
			continue
		}
		if !tty {
			fmt.Fprintf(w, "cachesim: %.1f%% of %d request replays after %s\n", 100*float64(done)/float64(total), total, time.Since(start).Round(time.Second))
			continue
		}
		if bar == nil {
			bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("simulating"),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(200*time.Millisecond))
		}
		_ = bar.Set64(done)
	}
}

func (p *simProgress) stop() {
	close(p.quit)
	p.wg.Wait()
}
