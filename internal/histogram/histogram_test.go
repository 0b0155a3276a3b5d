package histogram

import (
	"math"
	"sync"
	"testing"
	"time"
)

func TestObserveBuckets(t *testing.T) {
	h := New(0.01, 0.1, 1)
	for _, d := range []time.Duration{0, 5 * time.Millisecond, 10 * time.Millisecond, // ≤ 0.01: 3
		50 * time.Millisecond,           // ≤ 0.1
		time.Second,                     // ≤ 1 (inclusive)
		2 * time.Second, -time.Second} { // +Inf; negative → 0
		h.Observe(d)
	}
	s := h.Snapshot()
	want := []uint64{4, 1, 1, 1}
	for i, w := range want {
		if s.Counts[i] != w {
			t.Fatalf("counts = %v, want %v", s.Counts, want)
		}
	}
	if s.Count != 7 {
		t.Errorf("count = %d, want 7", s.Count)
	}
	if math.Abs(s.Sum-3.065) > 1e-9 {
		t.Errorf("sum = %v, want 3.065", s.Sum)
	}
	c := s.Cumulative()
	if c[0.01] != 4 || c[0.1] != 5 || c[1] != 6 || len(c) != 3 {
		t.Errorf("cumulative = %v", c)
	}
}

func TestQuantile(t *testing.T) {
	h := New(0.1, 0.2, 0.4)
	if !math.IsNaN(h.Snapshot().Quantile(0.5)) {
		t.Error("quantile of nothing is not NaN")
	}
	for range 10 {
		h.Observe(150 * time.Millisecond)
	}
	s := h.Snapshot()
	if got := s.Quantile(0.5); math.Abs(got-0.15) > 1e-9 {
		t.Errorf("p50 = %v, want 0.15 (middle of (0.1, 0.2])", got)
	}
	if got := s.Quantile(1); math.Abs(got-0.2) > 1e-9 {
		t.Errorf("p100 = %v, want 0.2", got)
	}
	h.Observe(time.Hour)
	h.Observe(time.Hour)
	h.Observe(time.Hour)
	if got := h.Snapshot().Quantile(0.99); got != 0.4 {
		t.Errorf("p99 in overflow = %v, want the top bound 0.4", got)
	}
}

func TestConcurrentObserve(t *testing.T) {
	h := New(FetchBounds...)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				h.Observe(time.Millisecond)
			}
		})
	}
	wg.Wait()
	if s := h.Snapshot(); s.Count != 4000 || s.Counts[0] != 4000 {
		t.Errorf("count %d, first bucket %d; want 4000", s.Count, s.Counts[0])
	}
}

func TestNewRejectsUnsortedBounds(t *testing.T) {
	for _, b := range [][]float64{{1, 0.5}, {1, 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%v) did not panic", b)
				}
			}()
			New(b...)
		}()
	}
}

func TestNilSnapshot(t *testing.T) {
	var h *Histogram
	if s := h.Snapshot(); s.Count != 0 || s.Counts != nil {
		t.Errorf("nil histogram snapshot = %+v", s)
	}
}
