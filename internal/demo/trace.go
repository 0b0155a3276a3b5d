package demo

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/sextant-crawler/sextant/cache/cachesim"
)

// traceFile is a cache-format fingerprint trace written by many goroutines.
type traceFile struct {
	mu  sync.Mutex
	f   *os.File
	w   *cachesim.TraceWriter
	err error
}

func createTrace(path string) (*traceFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("demo: trace: %w", err)
	}
	w, err := cachesim.NewTraceWriter(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("demo: trace: %w", err)
	}
	return &traceFile{f: f, w: w}, nil
}

// add records one fingerprint; the first error is kept and reported by close.
func (t *traceFile) add(fp uint64) {
	t.mu.Lock()
	if t.err == nil {
		t.err = t.w.Add(fp)
	}
	t.mu.Unlock()
}

func (t *traceFile) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Join(t.err, t.w.Close(), t.f.Close())
}
