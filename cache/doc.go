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
// lookup reads at most two cache lines and compares without branches. The
// table has 2% + 8 more slots than entries, ~8.3 bytes per entry (9.1 at k =
// 100). While the cache fills, a new entry goes to the emptier bucket of its
// pair, with cuckoo displacement when both are full. See ctable.go.
//
// Once full, CLOCK and RANDOM are set-associative: a miss evicts from the
// new fingerprint's own bucket pair (16 slots), and the new entry takes the
// victim's slot. RANDOM picks a uniformly random resident of the pair; CLOCK
// runs a hand over the pair's 16 slots from a position that turns with every
// eviction, clearing the marks it passes and evicting the first unmarked
// resident (new entries start marked, a hit sets the mark). A miss then
// touches only the two cache lines its lookup read: 12–15 CPU-ns at k = 2^16
// instead of 44–48 with a global hand and displacement walks
// (docs/bench/cache.md).
// The price is fidelity, which the tests bound (TestCloseToTextbook):
// against textbook CLOCK and RANDOM (k frames, a global hand or a uniform
// victim), RANDOM's miss rates were within 0.3 points on every trace tried.
// CLOCK's were within 0.3 points on uniform random streams, loops and small
// keys, but 1.0–1.8 points higher on the Zipf + recency streams in their
// critical region (k = 2^11–2^14 of the default stream scaled down 16×,
// k = 2^15–2^18 of the full-size one; in the 10⁸-request sweep 1.2–2.2
// points above LRU at k = 2^15–2^19, where the old global-hand CLOCK was
// 0.1–0.5 above it): a
// hand over 16 slots protects a new or recently used entry for fewer
// misses than one over k slots (a hand per bucket, tried, recovers only
// 0.2–0.4 of those points). Loops over k+1 items, textbook CLOCK's worst
// case (every request misses), miss 1.6–17% here. The set-associative
// adversary, fingerprints crafted to share one bucket pair, thrashes in
// that pair's 16 slots and leaves the rest of the cache alone
// (TestPairCollisionConfined).
//
// Fingerprint 0 marks an empty slot, so it is stored as the constant ZeroKey:
// the fingerprints 0 and ZeroKey are the same entry to every cache (a
// probability of 2⁻⁶³ per URL pair; negligible).
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
