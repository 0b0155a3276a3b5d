package due_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/cputime"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// The workload: a crawl-like candidate stream over `distinct` URLs. Each
// candidate is new with probability 1/6 (so ≈6 candidates per distinct URL),
// else a link to a recent URL (60%: same-site locality, last 2000 URLs) or
// to an older one skewed towards the earliest, most linked pages (40%).
// URL strings are built per candidate (≈45 bytes) and fingerprinted; every
// alternative pays the same generator cost, measured alone as "gen".
type workload struct {
	rng      *rand.Rand
	distinct int
	n        int // distinct URLs produced so far
	buf      []byte
	cands    int
}

func newWorkload(distinct int) *workload {
	return &workload{rng: rand.New(rand.NewPCG(42, 43)), distinct: distinct}
}

// fill refills es with up to len(es) candidates; it returns how many.
func (w *workload) fill(es []due.Entry) int {
	i := 0
	for ; i < len(es) && w.n < w.distinct; i++ {
		var id int
		r := w.rng.IntN(60)
		switch {
		case w.n == 0 || r < 10:
			id = w.n
			w.n++
		case r < 40:
			id = w.n - 1 - w.rng.IntN(min(w.n, 2000))
		default:
			u := w.rng.Float64()
			id = int(float64(w.n) * u * u)
		}
		b := append(w.buf[:0], "http://h"...)
		b = strconv.AppendInt(b, int64(id>>6), 10)
		b = append(b, ".sim.test/a/page-"...)
		b = strconv.AppendInt(b, int64(id), 10)
		b = append(b, ".html"...)
		w.buf = b
		s := string(b)
		es[i] = due.Entry{FP: fingerprint.URL(s), URL: s}
	}
	w.cands += i
	return i
}

// seenSet is one alternative under test.
type seenSet interface {
	offer(es []due.Entry) error // check and insert; count new ones
	finish() error              // make everything durable / final
	emitted() uint64
	close() error
}

type mapSet struct {
	m   map[uint64]struct{}
	new uint64
}

func (s *mapSet) offer(es []due.Entry) error {
	for _, e := range es {
		if _, ok := s.m[e.FP]; !ok {
			s.m[e.FP] = struct{}{}
			s.new++
		}
	}
	return nil
}
func (s *mapSet) finish() error   { return nil }
func (s *mapSet) emitted() uint64 { return s.new }
func (s *mapSet) close() error    { s.m = nil; return nil }

type genOnly struct{}

func (genOnly) offer([]due.Entry) error { return nil }
func (genOnly) finish() error           { return nil }
func (genOnly) emitted() uint64         { return 0 }
func (genOnly) close() error            { return nil }

// pebbleSet: fingerprints as 8-byte big-endian keys. Each batch of
// candidates is sorted and deduplicated, probed with one iterator, and the new keys are written in one batch committed
// without fsync — the batched Get/Set a pebble seen-set would use.
type pebbleSet struct {
	db  *pebble.DB
	new uint64
	fps []uint64
	key [8]byte
}

func (s *pebbleSet) offer(es []due.Entry) error {
	s.fps = s.fps[:0]
	for _, e := range es {
		s.fps = append(s.fps, e.FP)
	}
	slices.Sort(s.fps)
	s.fps = slices.Compact(s.fps)
	// One iterator, keys in increasing order (pebble's SeekGE reuses its
	// position). Measured faster here than a point Get per key (17 µs
	// against 10 µs per check at 10⁶), bloom filters notwithstanding.
	it, err := s.db.NewIter(nil)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	for _, fp := range s.fps {
		binary.BigEndian.PutUint64(s.key[:], fp)
		if it.SeekGE(s.key[:]) && bytes.Equal(it.Key(), s.key[:]) {
			continue
		}
		if err := b.Set(s.key[:], nil, nil); err != nil {
			return err
		}
		s.new++
	}
	if err := it.Close(); err != nil {
		return err
	}
	return b.Commit(pebble.NoSync)
}
func (s *pebbleSet) finish() error   { return s.db.Flush() }
func (s *pebbleSet) emitted() uint64 { return s.new }
func (s *pebbleSet) close() error    { return s.db.Close() }

type countSink struct{ n uint64 }

func (c *countSink) Deliver(_ uint64, urls []due.Entry) error { c.n += uint64(len(urls)); return nil }

type dueSet struct {
	d    *due.DUE
	sink *countSink
}

func (s *dueSet) offer(es []due.Entry) error { return s.d.AddBatch(es) }
func (s *dueSet) finish() error              { return s.d.Flush() }
func (s *dueSet) emitted() uint64            { return s.sink.n }
func (s *dueSet) close() error               { return s.d.Close() }

// dueBuffer is the buffer size used at a scale: distinct/64 (≥ 64Ki), so
// the buffers stay well under 1 byte per URL held.
func dueBuffer(distinct int) int { return max(1<<16, distinct/64) }

func dirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkSeenSet compares the disk DUE with a pebble seen-set and a Go
// map over the same candidate stream. One iteration is the whole stream;
// run with -benchtime=1x. SEXTANT_LONG=1 adds 10⁸ distinct URLs.
func BenchmarkSeenSet(b *testing.B) {
	scales := []int{1e6, 1e7}
	if os.Getenv("SEXTANT_LONG") != "" {
		scales = append(scales, 1e8)
	}
	if s := os.Getenv("DUE_BENCH_SCALES"); s != "" {
		scales = nil
		for _, f := range filepath.SplitList(s) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				b.Fatal(err)
			}
			scales = append(scales, int(v))
		}
	}
	for _, distinct := range scales {
		for _, alt := range []string{"gen", "due", "due-sync", "pebble", "map"} {
			if os.Getenv("DUE_BENCH_SKIP_"+alt) != "" {
				continue
			}
			b.Run(fmt.Sprintf("distinct=%.0e/%s", float64(distinct), alt), func(b *testing.B) {
				for range b.N {
					runSeenSet(b, alt, distinct)
				}
			})
		}
	}
}

func runSeenSet(b *testing.B, alt string, distinct int) {
	dir := b.TempDir()
	w := newWorkload(distinct)
	es := make([]due.Entry, 1024)
	base := heapAlloc()
	var s seenSet
	var d *due.DUE
	switch alt {
	case "gen":
		s = genOnly{}
	case "map":
		s = &mapSet{m: map[uint64]struct{}{}}
	case "pebble":
		// Bloom filters on every level: a miss (a new URL) then rarely
		// reads a data block. Default block cache (8 MiB).
		po := &pebble.Options{}
		for i := range po.Levels {
			po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		}
		db, err := pebble.Open(dir, po)
		if err != nil {
			b.Fatal(err)
		}
		s = &pebbleSet{db: db}
	case "due", "due-sync":
		// "due" writes its log without waiting (SyncNone); "due-sync" is
		// the crawler's setting (SyncAlways: each AddBatch of 1,024
		// candidates returns only once its log records are fsynced).
		mode := due.SyncNone
		if alt == "due-sync" {
			mode = due.SyncAlways
		}
		sink := &countSink{}
		var err error
		d, err = due.Open(dir, due.Options{Sink: sink, Sync: mode,
			BufferEntries: dueBuffer(distinct), FlushInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		s = &dueSet{d: d, sink: sink}
	}
	// Sample the DUE's own accounting of held memory (buffers, run
	// indexes) to report its peak, which falls during merges.
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if d != nil {
					peak.Store(max(peak.Load(), d.Stats().MemBytes))
				}
			}
		}
	}()
	b.ResetTimer()
	cpu0 := cputime.Process()
	start := time.Now()
	for {
		n := w.fill(es)
		if n == 0 {
			break
		}
		if err := s.offer(es[:n]); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.finish(); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	cpu := cputime.Process() - cpu0
	b.StopTimer()
	close(stop)
	<-sampled
	ram := float64(heapAlloc()) - float64(base)
	disk := dirBytes(dir)
	if alt != "gen" && s.emitted() != uint64(distinct) {
		b.Fatalf("%s emitted %d, want %d", alt, s.emitted(), distinct)
	}
	b.ReportMetric(float64(w.cands)/el.Seconds(), "checks/s")
	b.ReportMetric(float64(el.Nanoseconds())/float64(w.cands), "ns/check")
	b.ReportMetric(float64(w.cands)/float64(distinct), "cands/URL")
	// CPU time of the whole process (all goroutines, including background
	// merges or compactions) per check: less sensitive than wall time to
	// other load on a shared machine.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(w.cands), "cpu-ns/check")
	b.ReportMetric(max(ram, 0)/float64(distinct), "RAM-B/URL")
	b.ReportMetric(float64(disk)/float64(distinct), "disk-B/URL")
	if d != nil {
		st := d.Stats()
		b.ReportMetric(float64(st.Merges), "merges")
		b.ReportMetric(float64(st.BytesWritten)/float64(st.BytesOnDisk), "write-amp")
		b.ReportMetric(st.MaxMerge.Seconds(), "max-merge-s")
		b.ReportMetric(float64(st.MemBytes)/float64(distinct), "held-B/URL")
		b.ReportMetric(float64(peak.Load())/float64(distinct), "peak-held-B/URL")
	}
	if err := s.close(); err != nil {
		b.Fatal(err)
	}
}
