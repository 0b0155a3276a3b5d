package cache

import (
	"errors"
	"fmt"
	"strings"
)

// Cache is a set of fingerprints with a replacement policy.
type Cache interface {
	// Seen reports whether fp is in the cache (a hit). On a miss the policy
	// inserts fp, evicting an entry if the cache is full.
	Seen(fp uint64) bool
	// Len is the number of entries held.
	Len() int
	// Cap is the most entries the cache holds.
	Cap() int
	// Stats returns the hit and miss counters.
	Stats() Stats
}

// Stats counts the outcomes of Seen.
type Stats struct {
	Hits, Misses uint64
}

// MissRate is Misses/(Hits+Misses), 0 with no requests.
func (s Stats) MissRate() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Misses) / float64(s.Hits+s.Misses)
}

// Names of the online policies, as New, NewShared and `crawler cachesim`
// spell them.
const (
	AlgoClock    = "clock"
	AlgoRandom   = "random"
	AlgoLRU      = "lru"
	AlgoInfinite = "infinite"
)

// OnlineAlgorithms are the policies a crawler can run (New accepts them).
var OnlineAlgorithms = []string{AlgoClock, AlgoRandom, AlgoLRU, AlgoInfinite}

// Errors.
var (
	ErrUnknownAlgo = errors.New("cache: unknown algorithm")
	ErrBadSize     = errors.New("cache: bad cache size")
)

// Key is the value every cache stores for fp: fp itself, except that a
// fingerprint whose top byte is 0 gets bit 56 set, because the scatter
// table's tag byte (a stored fingerprint's top byte) is 0 for an empty
// slot. So fp and fp|1<<56 are one entry when fp < 2⁵⁶ (fingerprint 0
// among them).
func Key(fp uint64) uint64 {
	if fp < 1<<56 {
		fp |= 1 << 56
	}
	return fp
}

// DefaultSeed seeds RANDOM caches made by New.
const DefaultSeed = 1

// New returns an online cache of k entries: clock, random, lru or infinite
// (which ignores k). The cache is not safe for concurrent use.
func New(algo string, k int) (Cache, error) {
	if k < 0 {
		return nil, fmt.Errorf("%w: %d", ErrBadSize, k)
	}
	switch strings.ToLower(algo) {
	case AlgoClock:
		return NewClock(k), nil
	case AlgoRandom:
		return NewRandom(k, DefaultSeed), nil
	case AlgoLRU:
		if k > MaxLRU {
			return nil, fmt.Errorf("%w: %d (lru holds at most %d)", ErrBadSize, k, MaxLRU)
		}
		return NewLRU(k), nil
	case AlgoInfinite:
		return NewInfinite(), nil
	}
	return nil, fmt.Errorf("%w: %q (online: %s)", ErrUnknownAlgo, algo, strings.Join(OnlineAlgorithms, ", "))
}
