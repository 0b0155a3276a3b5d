// Command sextantprof is `crawler crawl` with a CPU profile: the same flags
// (nodeflags.Add, the code `crawler crawl` uses), the same crawl.Node,
// plus --seeds and --cpuprofile. It exists so that the benchmark can
// profile exactly the crawl it measures without adding a profiling flag to
// the product. The profile covers Seed and Run, not Open and Close.
//
// --heapprofile FILE writes a heap profile after Run (before Close, so the
// node's structures are still live); with --heapprofile-every D it is also
// rewritten every D during the run, so that a long crawl stopped by hand
// leaves one. Either profile flag is enough.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sextant-crawler/sextant/cmd/crawler/nodeflags"
	"github.com/sextant-crawler/sextant/internal/crawl"
)

func main() {
	fs := flag.NewFlagSet("sextantprof", flag.ExitOnError)
	nf := nodeflags.Add(fs)
	seedsFile := fs.String("seeds", "", "file of seed URLs, one per line (required)")
	prof := fs.String("cpuprofile", "", "write a CPU profile here")
	heap := fs.String("heapprofile", "", "write a heap profile here after the run")
	every := fs.Duration("heapprofile-every", 0, "also rewrite --heapprofile this often during the run")
	limit := fs.Duration("duration", 0, "stop the crawl after this long (0: run to the end)")
	_ = fs.Parse(os.Args[1:])
	if *seedsFile == "" || (*prof == "" && *heap == "") {
		fmt.Fprintln(os.Stderr, "usage: sextantprof --seeds FILE (--cpuprofile FILE | --heapprofile FILE) --data DIR [crawler crawl flags]")
		os.Exit(2)
	}
	if err := run(nf, *seedsFile, *prof, *heap, *every, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "sextantprof:", err)
		os.Exit(1)
	}
}

func run(nf *nodeflags.NodeFlags, seedsFile, prof, heap string, every, limit time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
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
	if prof != "" {
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
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if heap != "" && every > 0 {
		wg.Add(1)
		go func() { // owner: run, which closes done and waits below
			defer wg.Done()
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					if err := writeHeap(heap); err != nil {
						fmt.Fprintln(os.Stderr, "sextantprof:", err)
					}
				}
			}
		}()
	}
	t0 := time.Now()
	err = n.Seed(ctx, seeds)
	if err == nil {
		err = n.Run(ctx, true)
	}
	close(done)
	wg.Wait()
	if prof != "" {
		pprof.StopCPUProfile()
	}
	if heap != "" {
		if herr := writeHeap(heap); err == nil {
			err = herr
		}
	}
	st := n.Stats()
	if cerr := n.Close(); err == nil {
		err = cerr
	}
	fmt.Printf("sextantprof: %d fetches in %v (%.0f pages/s)\n", st.Fetches, time.Since(t0).Round(time.Millisecond),
		float64(st.Fetches)/time.Since(t0).Seconds())
	return err
}

// writeHeap writes the heap profile to a temporary file and renames it, so
// that a reader never sees half a profile. The GC first makes inuse figures
// current (they are as of the last GC otherwise).
func writeHeap(path string) error {
	runtime.GC()
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return writeMemClasses(path + ".txt")
}

// writeMemClasses writes the runtime's memory classes (the whole of what
// the Go runtime maps, stacks and GC metadata included: the heap profile
// shows only live heap objects) and the goroutine count, one "name value"
// line each. Memory outside the runtime (pebble's cgo block cache and
// memtables) is RSS minus /memory/classes/total.
func writeMemClasses(path string) error {
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") || d.Name == "/sched/goroutines:goroutines" {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	var b strings.Builder
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			fmt.Fprintf(&b, "%s %d\n", s.Name, s.Value.Uint64())
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("memory classes: %w", err)
	}
	return nil
}
