package mrc

import "sync"

// Shared is an Estimator behind a mutex: safe for concurrent use by many
// goroutines (workers calling Observe, the status page calling Curve).
type Shared struct {
	mu sync.Mutex
	e  *Estimator
}

// NewShared returns a concurrency-safe Estimator for o.
func NewShared(o Options) (*Shared, error) {
	e, err := New(o)
	if err != nil {
		return nil, err
	}
	return &Shared{e: e}, nil
}

// Observe records one request for fp.
func (s *Shared) Observe(fp uint64) {
	s.mu.Lock()
	s.e.Observe(fp)
	s.mu.Unlock()
}

// ObserveBatch records a batch of requests under one lock acquisition.
func (s *Shared) ObserveBatch(fps []uint64) {
	s.mu.Lock()
	for _, fp := range fps {
		s.e.Observe(fp)
	}
	s.mu.Unlock()
}

// Curve returns the estimated curve of algo (see Estimator.Curve).
func (s *Shared) Curve(algo string) ([]Point, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e.Curve(algo)
}

// Requests is the number of requests observed.
func (s *Shared) Requests() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e.Requests()
}

// Curves returns every algorithm's curve (see Estimator.Curves).
func (s *Shared) Curves() map[string][]Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e.Curves()
}
