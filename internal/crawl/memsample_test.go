package crawl

import (
	"runtime"
	"sync"
	"time"
)

// heapSampler records the Go heap in use (runtime.MemStats.HeapInuse) every
// interval until Stop: the peak, and the number of samples.
type heapSampler struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	peak    uint64
	samples int
}

func startHeapSampler(every time.Duration) *heapSampler {
	s := &heapSampler{stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			s.peak = max(s.peak, ms.HeapInuse)
			s.samples++
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling and returns the peak heap in use and the number of
// samples.
func (s *heapSampler) Stop() (peak uint64, samples int) {
	close(s.stop)
	s.wg.Wait()
	return s.peak, s.samples
}

// liveHeap is the heap still reachable after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
