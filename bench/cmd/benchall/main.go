// Command benchall is the one-command benchmark of issue 9 (`make bench`):
// it builds the Sextant crawler, the ceiling loop and a colly crawler, serves
// ONE synthetic web in its own process on loopback, runs the four contenders
// alternately (ceiling, Sextant single node, Sextant 3-node cluster, colly;
// A B C D A B C D …), each as its own process(es) so that CPU time
// (getrusage utime+stime) and peak RSS (Maxrss) are measured per run, checks
// every run's fetched set against simweb's oracle, runs quick versions of the
// committed package benchmarks (DUE, cache, cachesim), and regenerates
// BENCHMARKS.md, keeping its hand-written section and appending a History
// row.
//
// Run it from the bench/ directory (a separate module, so the product never
// depends on colly):
//
//	cd bench && go run ./cmd/benchall -out ../BENCHMARKS.md
//
// Everything it writes besides -out goes under -work (default out/, which
// bench/.gitignore ignores). The machine is usually shared: the report gives
// the load average before and after, and medians over the repetitions.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type options struct {
	out         string
	work        string
	root        string
	hosts       int
	pages       int
	reps        int
	budget      time.Duration
	workers     int
	nodeWorkers int
	kinds       []string
	quick       bool
	profile     bool
	runTimeout  time.Duration
	netns       bool
	// sextantArgs are appended to every single-node Sextant run's
	// command line (-sextant-args), after the harness's own flags.
	sextantArgs []string
}

func main() {
	var o options
	var kinds, sextantArgs string
	flag.StringVar(&o.out, "out", "../BENCHMARKS.md", "report to (re)generate")
	flag.StringVar(&o.work, "work", "out", "directory for binaries, data dirs and logs")
	flag.StringVar(&o.root, "root", "..", "the Sextant repository (module root)")
	flag.IntVar(&o.hosts, "hosts", 1000, "simweb hosts")
	flag.IntVar(&o.pages, "pages", 55000, "simweb articles in all (the reachable URL set is ≈1.8× this: images, media, 404s)")
	flag.IntVar(&o.reps, "reps", 3, "repetitions of each contender (fewer if -budget runs out; at least 1)")
	flag.DurationVar(&o.budget, "budget", 20*time.Minute, "wall-clock budget: no new round starts that would not fit")
	flag.IntVar(&o.workers, "workers", 64, "Sextant workers = colly parallelism = ceiling goroutines")
	flag.IntVar(&o.nodeWorkers, "node-workers", 0, "workers per cluster node (0: -workers/3 rounded up, the same total)")
	flag.StringVar(&kinds, "kinds", "ceiling,sextant,sextant-f0,cluster,colly,scrapy,wget2,ceiling-https,sextant-https,sextant-f0-https", "contenders, in the order of a round (ceiling, sextant, sextant-f0, cluster, colly, scrapy, wget2; ceiling-https, sextant-https and sextant-f0-https crawl the same web with HTTPS hosts, served by a second simweb)")
	flag.BoolVar(&o.quick, "quick", true, "also run the quick package benchmarks (DUE, cache, cachesim)")
	flag.BoolVar(&o.profile, "profile", true, "finally crawl the web once more with Sextant under a CPU profiler (bench/cmd/sextantprof) and put the top entries in the report")
	flag.DurationVar(&o.runTimeout, "run-timeout", 10*time.Minute, "kill a contender run after this long")
	flag.BoolVar(&o.netns, "netns", true, "run simweb and every contender in a private network namespace whose /etc/hosts names the web's hosts (needs root; scrapy and wget2 need it)")
	flag.StringVar(&sextantArgs, "sextant-args", "", "extra `flags` for every single-node Sextant run (sextant, sextant-f0 and their -https rows; the cluster reads a config file), split at spaces and given after the harness's own, so they override them: an A/B of a setting by committed command, e.g. -sextant-args '--due-flush 100ms'; the report names them")
	flag.Parse()
	o.sextantArgs = strings.Fields(sextantArgs)
	o.kinds = strings.Split(kinds, ",")
	for _, k := range o.kinds {
		if _, ok := runners[k]; !ok {
			fmt.Fprintf(os.Stderr, "benchall: unknown kind %q\n", k)
			os.Exit(2)
		}
	}
	if o.nodeWorkers == 0 {
		o.nodeWorkers = (o.workers + 2) / 3
	}
	if o.hosts < 1 || o.pages < o.hosts || o.reps < 1 || o.workers < 1 {
		fmt.Fprintln(os.Stderr, "benchall: need hosts ≥ 1, pages ≥ hosts, reps ≥ 1, workers ≥ 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "benchall:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	rep, err := measure(ctx, o)
	if err != nil {
		return err
	}
	if err := rep.write(o.out); err != nil {
		return err
	}
	logf("wrote %s in %v", o.out, rep.Elapsed.Round(time.Second))
	return nil
}

// measure builds the contenders, serves the web and runs every round (and
// the quick benchmarks and the profile if asked for): the report run writes.
func measure(ctx context.Context, o options) (*report, error) {
	start := time.Now()
	var err error
	if o.work, err = filepath.Abs(o.work); err != nil {
		return nil, err
	}
	if o.root, err = filepath.Abs(o.root); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return nil, err
	}
	rep := &report{Started: start.UTC(), Opts: o}
	rep.Machine = machineInfo()
	rep.Revision = revision(o.root)
	rep.LoadBefore = loadAvg()
	logf("machine: %s; load %s", rep.Machine, rep.LoadBefore)

	bins, err := build(ctx, o)
	if err != nil {
		return nil, err
	}
	if o.netns {
		ns, err := setupNetns(fmt.Sprintf("sextant-bench-%d", os.Getpid()))
		if err != nil {
			return nil, err
		}
		nsCur = ns
		defer func() { nsCur = nil; ns.close() }()
	}
	env, err := startEnv(ctx, o, bins)
	if err != nil {
		return nil, err
	}
	defer env.close()
	if nsCur != nil {
		if err := nsCur.writeHosts(env.web.Hosts()); err != nil {
			return nil, err
		}
	}
	rep.Web = env.describe()
	logf("web: %s", rep.Web)
	if env.tls != nil {
		rep.WebHTTPS, rep.OracleHTTPS = env.tls.describe(), env.tls.oracle.Size()
		logf("HTTPS web: %s", rep.WebHTTPS)
	}

	// Alternate the contenders round after round. A run starts only if it
	// is expected (from its previous run) to end within the budget, keeping
	// time for the quick benchmarks: on a loaded machine the slow contender
	// (colly) may run fewer times than the others, never zero times.
	last := map[string]time.Duration{}
	for r := 1; r <= o.reps; r++ {
		ran := 0
		for _, k := range o.kinds {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if r > 1 && time.Since(start)+last[k]+quickEstimate(o) > o.budget {
				logf("budget: round %d: skipping %s (its last run took %v)", r, k, last[k].Round(time.Second))
				rep.Notes = append(rep.Notes, fmt.Sprintf("round %d: %s skipped to stay within the %v budget (its previous run took %v)",
					r, k, o.budget, last[k].Round(time.Second)))
				continue
			}
			logf("round %d: %s …", r, k)
			web := env.forKind(k)
			t0, srv0 := time.Now(), web.serverCPU()
			res := runners[k](ctx, o, web, r)
			last[k] = time.Since(t0)
			res.SrvCPU = web.serverCPU() - srv0
			res.Kind, res.Rep, res.Load = k, r, loadAvg()
			web.check(&res)
			logf("round %d: %s", r, res.summary())
			rep.Runs = append(rep.Runs, res)
			ran++
		}
		if ran == 0 {
			break
		}
		rep.Rounds = r
	}
	if o.quick && ctx.Err() == nil {
		rep.Quick = runQuick(ctx, o, bins)
	}
	rep.compute()
	if o.profile && ctx.Err() == nil {
		rep.Profile = profileSextant(ctx, o, env)
	}
	rep.LoadAfter = loadAvg()
	rep.Elapsed = time.Since(start)
	return rep, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s benchall: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}
