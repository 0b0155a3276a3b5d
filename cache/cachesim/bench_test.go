package cachesim

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/sextant-crawler/sextant/cache/tracegen"
)

// BenchmarkSimulate runs the full sweep (6 algorithms × k = 2^0…2^25) over a
// generated trace of SEXTANT_SIM_N requests (default 10^6).
//
//	SEXTANT_SIM_N=10000000 go test ./cache/cachesim -run '^$' -bench Simulate -benchtime 1x
func BenchmarkSimulate(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("SEXTANT_SIM_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	tr, err := tracegen.Generate(tracegen.Options{Seed: 1}, n)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Simulate(context.Background(), tr, SimOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N), "s/sweep")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

// BenchmarkMIN compares MIN for all sizes 2^0…2^25 in one pass (the OPT
// stack) with one heap simulation per size, over a generated trace of
// SEXTANT_SIM_N requests (default 10^6). Metrics are seconds for the whole
// curve, on one goroutine.
//
//	SEXTANT_SIM_N=10000000 go test ./cache/cachesim -run '^$' -bench MIN -benchtime 1x
func BenchmarkMIN(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("SEXTANT_SIM_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	tr, err := tracegen.Generate(tracegen.Options{Seed: 1}, n)
	if err != nil {
		b.Fatal(err)
	}
	ids, d := densify(tr)
	next := nextUses(ids, d)
	ks := PowersOfTwo(0, 25)
	m := &meter{ctx: context.Background()}
	b.Run("onepass", func(b *testing.B) {
		for range b.N {
			if _, err := minStackMisses(ids, next, d, ks, m); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/curve")
	})
	b.Run("persize", func(b *testing.B) {
		for range b.N {
			for _, k := range ks {
				if k >= d {
					continue
				}
				if _, err := minMisses(ids, next, d, k, m); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/curve")
	})
}
