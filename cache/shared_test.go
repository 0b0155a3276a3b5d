package cache

import "testing"

func TestSharedConcurrent(t *testing.T) {
	for _, algo := range []string{AlgoClock, AlgoRandom, AlgoLRU} {
		s, err := NewShared(algo, 2000, 8)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan uint64)
		for w := range 4 {
			go func() {
				var hits uint64
				for i := range 5000 {
					if s.Seen(mix64(uint64(i%300) + uint64(w)<<40)) {
						hits++
					}
				}
				done <- hits
			}()
		}
		var hits uint64
		for range 4 {
			hits += <-done
		}
		st := s.Stats()
		if st.Hits != hits || st.Hits+st.Misses != 20000 {
			t.Errorf("%s: stats %+v, workers counted %d hits", algo, st, hits)
		}
		if s.Len() > s.Cap() || s.Cap() < 2000 {
			t.Errorf("%s: len %d cap %d", algo, s.Len(), s.Cap())
		}
		// 4 workers × 300 distinct items in 2000+ slots spread over 8
		// shards (≈150 items for 250 slots each): most requests hit,
		// whatever the interleaving (with 1000 slots LRU could thrash).
		if st.MissRate() > 0.3 {
			t.Errorf("%s: miss rate %.2f", algo, st.MissRate())
		}
	}
	if _, err := NewShared("min", 10, 2); err == nil {
		t.Error("NewShared accepted an offline algorithm")
	}
}
