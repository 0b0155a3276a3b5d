package frontier

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Applied returns the seq of the last batch AddBatch applied from source (0:
// none). A consumer of an exactly-once producer (the DUE) compares it with
// the producer's own record to detect a store that lost batches.
func (f *Frontier) Applied(source string) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return 0, err
	}
	return f.appliedLocked(source)
}

// Scan calls fn with every stored URL (queued or leased), front queues
// first, then back queues host by host, and returns how many it read. It
// reads every queue key from pebble, so it also checks their blocks'
// checksums; a count that differs from the stored counter (Len + InFlight)
// is an error wrapping the corruption error. fn must not call the Frontier.
// Scan is meant for checks and repairs of a frontier nobody is crawling
// from: it holds the lock for the whole scan.
func (f *Frontier) Scan(fn func(Item) error) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return 0, err
	}
	if err := f.flushDoneLocked(); err != nil {
		return 0, err
	}
	var n int64
	for _, p := range []byte{prefixFront, prefixHost} {
		it, err := f.db.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
		if err != nil {
			return n, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			item, err := decodeEntry(it.Value())
			if err == nil {
				err = fn(item)
			}
			if err != nil {
				it.Close()
				return n, err
			}
			n++
		}
		if err := it.Close(); err != nil {
			return n, err
		}
	}
	if n != f.mu.count {
		return n, fmt.Errorf("%w: %d URLs stored, counter says %d", errCorrupt, n, f.mu.count)
	}
	return n, nil
}
