// Package cache holds the caches of 64-bit URL fingerprints a crawl worker
// consults before it hands a URL on: CLOCK and RANDOM (a scatter table, as
// the caching study recommends), exact LRU and INFINITE. The simulator that
// measures them, its trace format and the offline policies (MIN, STATIC) are
// in cache/cachesim; synthetic streams in cache/tracegen.
//
// # Usage
//
// A crawl worker owns one cache made by New (or NewClock, NewRandom, NewLRU)
// and calls Seen for every fingerprint it is about to hand to the DUE or to a
// peer: true means the fingerprint was in the cache (drop the URL), false means
// it was not and has now been inserted. Caches made by New and the New*
// constructors are NOT safe for concurrent use; a cache shared by many
// goroutines is made with NewShared, which shards it by fingerprint and locks
// each shard.
//
// CLOCK and RANDOM keep their entries in a scatter table: a flat array of
// fingerprints with the mark bits packed one per slot, no pointers and no
// allocation per entry. The slots are grouped in buckets of eight (one cache
// line) and each fingerprint has two candidate buckets, its bucket pair: a
// lookup reads at most two cache lines and compares without branches. A new
// entry goes to the emptier bucket of its pair, with cuckoo displacement
// when both are full. See ctable.go.
//
// CLOCK's hand sweeps slot 0 of every bucket, then slot 1, and so on, so
// that consecutive evictions free slots in different buckets, where new
// fingerprints find them; its order is that slot order, not insertion order,
// and a new entry is inserted marked (textbook CLOCK, as in the paper,
// inserts it unmarked: docs/caching-study.md measures the difference).
// RANDOM is set-associative once full (a victim drawn from the new
// fingerprint's 16 slots), so a miss touches only the lines its lookup read;
// CLOCK keeps a global hand because a hand over 16 slots missed more often.
// Crafted fingerprints that share one bucket pair thrash in that pair only
// (TestPairCollisionConfined). Measurements: docs/bench/cache-history.md.
//
// A fingerprint's top byte is the tag the scatter table compares first, and
// tag 0 marks an empty slot, so every cache stores a fingerprint whose top
// byte is 0 with bit 56 set: fp and fp|1<<56 (fp < 2⁵⁶, fingerprint 0
// among them) are the same entry. Two given random fingerprints are merged
// so with probability 2⁻⁶³; a lookup's chance of a false hit grows from
// k·2⁻⁶⁴ by 1/128 of that (negligible beside the DUE's 64-bit collisions,
// internal/fingerprint).
//
// Design: Broder, Najork & Wiener, "Efficient URL Caching for World Wide Web
// Crawling" (WWW 2003).
package cache
