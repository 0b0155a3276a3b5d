package cache

import (
	"fmt"
	"math/bits"
	"sync"
)

// Shared is a cache shared by many goroutines: the fingerprint space is split
// into shards, each an independent cache of the chosen policy behind its own
// mutex, so workers contend only when they touch the same shard. Safe for
// concurrent use.
type Shared struct {
	shards []sharedShard
	k      int
}

type sharedShard struct {
	mu sync.Mutex
	c  Cache
	_  [40]byte // keep shards' locks on separate cache lines
}

// NewShared returns a concurrency-safe cache of about k entries in total
// (each of the shards holds ⌈k/shards⌉) using an online policy (see New).
// shards ≤ 0 means 64.
func NewShared(algo string, k, shards int) (*Shared, error) {
	if k < 0 {
		return nil, fmt.Errorf("%w: %d", ErrBadSize, k)
	}
	if shards <= 0 {
		shards = 64
	}
	per := (k + shards - 1) / shards
	s := &Shared{shards: make([]sharedShard, shards)}
	for i := range s.shards {
		c, err := New(algo, per)
		if err != nil {
			return nil, err
		}
		if r, ok := c.(*Random); ok {
			r.rng = DefaultSeed + uint64(i)
		}
		s.shards[i].c = c
	}
	s.k = per * shards
	return s, nil
}

// shard picks by the low bits of fp: the tables inside use the high bits.
func (s *Shared) shard(fp uint64) *sharedShard {
	h, _ := bits.Mul64(uint64(uint32(fp)), uint64(len(s.shards))<<32)
	return &s.shards[h]
}

// Seen implements Cache.
func (s *Shared) Seen(fp uint64) bool {
	sh := s.shard(fp)
	sh.mu.Lock()
	hit := sh.c.Seen(fp)
	sh.mu.Unlock()
	return hit
}

// Len implements Cache.
func (s *Shared) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.c.Len()
		sh.mu.Unlock()
	}
	return n
}

// Cap implements Cache.
func (s *Shared) Cap() int { return s.k }

// Stats implements Cache.
func (s *Shared) Stats() Stats {
	var st Stats
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		x := sh.c.Stats()
		sh.mu.Unlock()
		st.Hits += x.Hits
		st.Misses += x.Misses
	}
	return st
}
