// Package cache holds caches of 64-bit URL fingerprints and the simulator that
// measures them.
//
// Policies: CLOCK and RANDOM (a scatter table with circular chains, as the
// caching study recommends), exact LRU, STATIC (preloaded with the most
// frequent fingerprints), MIN (Belady's clairvoyant optimum, offline, only in
// the simulator) and INFINITE.
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
// CLOCK's table has ~8.9% more slots than entries (≤ 8.85 bytes per entry
// for k ≥ 256, 9.8 at k = 100). Its hand sweeps slot 0 of every bucket,
// then slot 1 of every bucket, and so on (so that consecutive evictions free
// slots in different buckets, where new fingerprints find them), so the
// clock order is that slot order rather than insertion order; an entry is
// inserted with its mark set so that it survives one sweep, as a freshly
// loaded page does in textbook CLOCK. Its miss rates were within 0.35 points
// of textbook CLOCK's on every trace of TestCloseToTextbook.
//
// RANDOM is set-associative once full: a miss evicts a uniformly random
// resident of the new fingerprint's bucket pair (16 slots) and the new entry
// takes its slot, so a miss touches only the two cache lines its lookup
// read: 12 CPU-ns at k = 2^16 instead of 43 with a victim drawn from the
// whole table and a displacement walk (docs/bench/cache.md). Its table has
// 2% + 8 spare slots (~8.3 bytes per entry), which only the filling needs.
// Against textbook RANDOM (a uniform victim among k frames) its miss rates
// were within 0.3 points on every trace of TestCloseToTextbook (uniform,
// Zipf + recency, small keys, loops), and at every size of the 10⁸-request
// sweep within 0.24 points of the old RANDOM's. The same design for CLOCK (a
// hand over the pair's 16 slots, turning with every eviction) missed in 15
// instead of 46 CPU-ns but 1.0–1.9 points more often than textbook CLOCK on
// streams with the crawl's shape (a hand over 16 slots protects new and
// recently used entries for fewer misses than one over k), so CLOCK keeps
// its global hand. The two-choice table's adversary, fingerprints crafted to
// share one bucket pair, thrashes in that pair's 16 slots and leaves the
// rest of the cache alone (TestPairCollisionConfined).
//
// A fingerprint's top byte is the tag the scatter table compares first, and
// tag 0 marks an empty slot, so every cache stores a fingerprint whose top
// byte is 0 with bit 56 set: fp and fp|1<<56 (fp < 2⁵⁶, fingerprint 0
// among them) are the same entry. Two given random fingerprints are merged
// so with probability 2⁻⁶³; a lookup's chance of a false hit grows from
// k·2⁻⁶⁴ by 1/128 of that (negligible beside the DUE's 64-bit collisions,
// internal/fingerprint).
//
// # Traces and the simulator
//
// TraceWriter and TraceReader read and write the binary fingerprint trace the
// host splitter logs (see the format in trace.go); Generator makes a synthetic
// Zipf + recency stream; Simulate runs every policy at every cache size over a
// trace (LRU for all sizes in one pass by Mattson stack distances, MIN for all
// sizes in one pass by the OPT stack kept as one heap per level between
// sizes, CLOCK and RANDOM per size in parallel; or,
// approximately, on a spatial sample of the fingerprints with SampleRate), and
// Recommend turns the curve into the operator's answer. The simulator is
// deterministic for a given trace and options.
//
// Design: Broder, Najork & Wiener, "Efficient URL Caching for World Wide Web
// Crawling" (WWW 2003).
package cache
