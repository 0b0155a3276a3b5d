package frontier

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/cputime"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sextant-crawler/sextant/internal/logging"
)

// Benchmarks at scale. Run with -benchtime=1x: each runs its workload once
// and reports rates as metrics. Sizes: 10⁶ URLs, 10⁷ with SEXTANT_LONG=1,
// any N with SEXTANT_FRONTIER_N=N (e.g. 100000000 for 10⁸).
// SEXTANT_ENQUEUE_ONLY=1 makes BenchmarkFrontier stop after the enqueue
// figures (memory and disk per queued URL), skipping the dequeue.
// SEXTANT_FRONTIER_ANNOTATE=1 queues the URLs with the crawl's via and hop
// path annotations.
//
//	go test -run '^$' -bench . -benchtime=1x ./frontier
//	SEXTANT_FRONTIER_N=100000000 SEXTANT_ENQUEUE_ONLY=1 go test -run '^$' -bench 'BenchmarkFrontier$' -benchtime=1x -timeout 120m ./frontier

const (
	benchBatch   = 1000 // URLs per AddBatch, like a DUE hand-off
	benchPerHost = 100  // URLs per host
	benchWorkers = 8
)

// benchSize is the number of URLs of the scale benchmarks.
var benchSize = sync.OnceValue(func() int {
	if s := os.Getenv("SEXTANT_FRONTIER_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < benchBatch {
			panic(fmt.Sprintf("SEXTANT_FRONTIER_N=%q: want an integer ≥ %d", s, benchBatch))
		}
		return n
	}
	if os.Getenv("SEXTANT_LONG") != "" {
		return 10_000_000
	}
	return 1_000_000
})

func benchItem(i int) Item {
	h := (i * 7919) % max(benchSize()/benchPerHost, 1)
	host := fmt.Sprintf("h%06d.sim.test", h)
	u := fmt.Sprintf("http://%s/section/%d/page-%08d.html", host, i%97, i)
	if benchAnnotate {
		// As internal/crawl queues a link (annot.go): its hop path and the
		// page it was found on (each page has 10 links), stored as the
		// length of the prefix it shares with the URL, '.', and the rest.
		via := fmt.Sprintf("http://%s/section/%d/page-%08d.html", host, (i/10)%97, i/10)
		n := 0
		for n < len(u) && u[n] == via[n] {
			n++
		}
		u += fmt.Sprintf("#h=%s#v=%d.%s", "LLLLL"[:1+i%5], n, via[n:])
	}
	return Item{URL: u, Host: host}
}

// benchAnnotate (SEXTANT_FRONTIER_ANNOTATE=1) queues URLs annotated with a
// via and hop path as the crawl does, to measure what they cost.
var benchAnnotate = os.Getenv("SEXTANT_FRONTIER_ANNOTATE") != ""

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rssMiB is the resident set size (Go heap plus pebble's off-heap
// memtables and block cache), from /proc; 0 where unavailable.
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb / 1024
		}
	}
	return 0
}

func cpuPerURL(b *testing.B, start time.Duration, n int, name string) {
	b.ReportMetric(float64(cputime.Process()-start)/float64(time.Microsecond)/float64(n), name)
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func benchOpts() Options {
	return Options{Workers: benchWorkers, Factor: 1e-9, MaxDelay: time.Nanosecond}
}

// fill enqueues n URLs in batches and returns the URLs/s.
func fill(b *testing.B, f *Frontier, from, n int) float64 {
	start := time.Now()
	items := make([]Item, 0, benchBatch)
	for i := from; i < from+n; i += benchBatch {
		items = items[:0]
		for j := i; j < min(i+benchBatch, from+n); j++ {
			items = append(items, benchItem(j))
		}
		if err := f.AddBatch("bench", uint64(i/benchBatch+1), items); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// drainN leases and completes n URLs with benchWorkers goroutines.
func drainN(b *testing.B, f *Frontier, n int) float64 {
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	left := n
	for range benchWorkers {
		wg.Go(func() {
			for {
				mu.Lock()
				if left == 0 {
					mu.Unlock()
					return
				}
				left--
				mu.Unlock()
				l, err := f.Next(context.Background())
				if err != nil {
					b.Error(err)
					return
				}
				if err := f.Done(l, Result{Duration: time.Millisecond}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkFrontier fills a frontier with benchSize URLs (10⁴ hosts per 10⁶
// URLs), measuring enqueue rate, heap growth per queued URL between 10% and
// 100% full, and disk bytes per URL; then it dequeues 20% with 8 workers
// (Next + Done, no politeness delay) while ≥ 80% stay queued.
func BenchmarkFrontier(b *testing.B) {
	for range b.N {
		n := benchSize()
		dir := b.TempDir()
		f, err := Open(dir, benchOpts())
		if err != nil {
			b.Fatal(err)
		}
		base := heapInUse()
		cpu0 := cputime.Process()
		tenth := n / 10
		r1 := fill(b, f, 0, tenth)
		heap10 := heapInUse()
		r2 := fill(b, f, tenth, n-tenth)
		heap100 := heapInUse()
		enq := (float64(tenth)/r1 + float64(n-tenth)/r2)
		cpuPerURL(b, cpu0, n, "enqueue-CPU-µs/URL") // includes 2 heap measurements
		b.ReportMetric(float64(n)/enq, "enqueue-URLs/s")
		b.ReportMetric(float64(int64(heap100)-int64(heap10))/float64(n-tenth), "heap-B/queued-URL")
		b.ReportMetric(float64(heap100-base)/(1<<20), "heap-MiB-at-full")
		b.ReportMetric(rssMiB(), "RSS-MiB-at-full")
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(dirSize(dir))/float64(n), "disk-B/URL")
		if os.Getenv("SEXTANT_ENQUEUE_ONLY") != "" {
			continue
		}

		f, err = Open(dir, benchOpts())
		if err != nil {
			b.Fatal(err)
		}
		cpu0 = cputime.Process()
		deq := drainN(b, f, n/5)
		cpuPerURL(b, cpu0, n/5, "dequeue-CPU-µs/URL")
		b.ReportMetric(deq, "dequeue-URLs/s")
		b.ReportMetric(float64(heapInUse()-base)/(1<<20), "heap-MiB-after-dequeue")
		if got := f.Len(); got != n-n/5 {
			b.Fatalf("Len %d after dequeue, want %d", got, n-n/5)
		}
		b.ReportMetric(float64(f.Stats().ActiveHosts), "active-hosts")
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPebbleBaseline does the same I/O with bare pebble, as a ceiling:
// enqueue writes one key per URL in synced batches of 1000; dequeue reads
// keys in order and deletes each in its own unsynced batch (as Done does),
// 8 goroutines sharing one iterator under a mutex.
func BenchmarkPebbleBaseline(b *testing.B) {
	for range b.N {
		n := benchSize()
		dir := b.TempDir()
		db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{logging.Discard()}})
		if err != nil {
			b.Fatal(err)
		}
		start, cpu0 := time.Now(), cputime.Process()
		var buf []byte
		for i := 0; i < n; i += benchBatch {
			bt := db.NewBatch()
			for j := i; j < min(i+benchBatch, n); j++ {
				it := benchItem(j)
				buf = encodeEntry(buf[:0], &it)
				bt.Set(frontKey(0, uint64(j)), buf, nil)
			}
			if err := bt.Commit(pebble.Sync); err != nil {
				b.Fatal(err)
			}
			bt.Close()
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "enqueue-URLs/s")
		cpuPerURL(b, cpu0, n, "enqueue-CPU-µs/URL")

		start, cpu0 = time.Now(), cputime.Process()
		iter, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixFront}, UpperBound: []byte{prefixFront + 1}})
		if err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		left := n / 5
		valid := iter.First()
		var wg sync.WaitGroup
		for range benchWorkers {
			wg.Go(func() {
				for {
					mu.Lock()
					if left == 0 || !valid {
						mu.Unlock()
						return
					}
					left--
					k := append([]byte(nil), iter.Key()...)
					if _, err := decodeEntry(iter.Value()); err != nil {
						b.Error(err)
					}
					valid = iter.Next()
					mu.Unlock()
					if err := db.Delete(k, pebble.NoSync); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(n/5)/time.Since(start).Seconds(), "dequeue-URLs/s")
		cpuPerURL(b, cpu0, n/5, "dequeue-CPU-µs/URL")
		iter.Close()
		db.Close()
	}
}
