package mrc

import (
	"testing"

	"github.com/sextant-crawler/sextant/cache"
)

func benchTrace(b *testing.B) []uint64 {
	tr, err := cache.Generate(cache.GenOptions{}, 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// BenchmarkObserve is the cost per observed request (after warm-up, so the
// fixed-size tier runs at its steady low rate).
func BenchmarkObserve(b *testing.B) {
	tr := benchTrace(b)
	for _, name := range []string{"default", "economy"} {
		b.Run(name, func(b *testing.B) {
			e, err := New(configs[name])
			if err != nil {
				b.Fatal(err)
			}
			for _, fp := range tr {
				e.Observe(fp)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.Observe(tr[i&(len(tr)-1)] ^ uint64(i>>20)*0x9e3779b97f4a7c15)
			}
			b.StopTimer()
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			// share of a crawl's CPU at 60 links per page and 20 µs or
			// 50 µs of CPU per page
			b.ReportMetric(100*60*ns/20000, "%cpu@20us/page")
			b.ReportMetric(100*60*ns/50000, "%cpu@50us/page")
		})
	}
}

// BenchmarkCacheLookup is the baseline: one Seen on the production CLOCK
// cache of 2^20 entries (what the observed cache does for the same request).
func BenchmarkCacheLookup(b *testing.B) {
	tr := benchTrace(b)
	c := cache.NewClock(1 << 20)
	for _, fp := range tr {
		c.Seen(fp)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Seen(tr[i&(len(tr)-1)] ^ uint64(i>>20)*0x9e3779b97f4a7c15)
	}
}

// BenchmarkSharedObserve is Observe through the mutex wrapper.
func BenchmarkSharedObserve(b *testing.B) {
	tr := benchTrace(b)
	s, err := NewShared(Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Observe(tr[i&(len(tr)-1)])
	}
}
