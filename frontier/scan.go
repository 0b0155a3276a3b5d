package frontier

import (
	"fmt"
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

// Scan calls fn with every stored URL (queued or leased), back queues host
// by host, then front queues, and returns how many it read. It reads every
// key from pebble, so it also checks every data block's checksum; a count that differs from the stored counter (Len + InFlight)
// is an error wrapping the corruption error. fn (nil: count only) must not
// call the Frontier.
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
	// One pass over every key (not only the queues): a damaged block
	// anywhere (host states, budgets, counters) fails here, not mid-crawl.
	var n int64
	it, err := f.db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) == 0 || k[0] != prefixFront && k[0] != prefixHost {
			continue
		}
		var err error
		if fn != nil {
			var item Item
			if item, err = decodeEntry(it.Value()); err == nil {
				err = fn(item)
			}
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
	if n != f.mu.count {
		return n, fmt.Errorf("%w: %d URLs stored, counter says %d", errCorrupt, n, f.mu.count)
	}
	return n, nil
}
