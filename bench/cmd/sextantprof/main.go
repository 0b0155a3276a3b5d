// Command sextantprof is `crawler crawl` with a CPU profile: the same flags
// (nodeflags.Add, the code `crawler crawl` uses), the same crawl.Node,
// plus --seeds and --cpuprofile. It exists so that the benchmark can
// profile exactly the crawl it measures without adding a profiling flag to
// the product. The profile covers Seed and Run, not Open and Close.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/sextant-crawler/sextant/cmd/crawler/nodeflags"
	"github.com/sextant-crawler/sextant/internal/crawl"
)

func main() {
	fs := flag.NewFlagSet("sextantprof", flag.ExitOnError)
	nf := nodeflags.Add(fs)
	seedsFile := fs.String("seeds", "", "file of seed URLs, one per line (required)")
	prof := fs.String("cpuprofile", "", "write a CPU profile here (required)")
	_ = fs.Parse(os.Args[1:])
	if *seedsFile == "" || *prof == "" {
		fmt.Fprintln(os.Stderr, "usage: sextantprof --seeds FILE --cpuprofile FILE --data DIR [crawler crawl flags]")
		os.Exit(2)
	}
	if err := run(nf, *seedsFile, *prof); err != nil {
		fmt.Fprintln(os.Stderr, "sextantprof:", err)
		os.Exit(1)
	}
}

func run(nf *nodeflags.NodeFlags, seedsFile, prof string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	seeds, err := crawl.ReadSeedsFile(seedsFile)
	if err != nil {
		return err
	}
	opts, err := nf.Options(seeds)
	if err != nil {
		return err
	}
	n, err := crawl.Open(opts)
	if err != nil {
		return err
	}
	f, err := os.Create(prof)
	if err != nil {
		n.Close()
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		n.Close()
		return err
	}
	t0 := time.Now()
	err = n.Seed(ctx, seeds)
	if err == nil {
		err = n.Run(ctx, true)
	}
	pprof.StopCPUProfile()
	st := n.Stats()
	if cerr := n.Close(); err == nil {
		err = cerr
	}
	fmt.Printf("sextantprof: %d fetches in %v (%.0f pages/s)\n", st.Fetches, time.Since(t0).Round(time.Millisecond),
		float64(st.Fetches)/time.Since(t0).Seconds())
	return err
}
