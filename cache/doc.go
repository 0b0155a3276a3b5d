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
// CLOCK and RANDOM keep their entries in a scatter table: a flat []uint64 of
// fingerprints with the mark bits packed one per slot, no pointers and no
// allocation per entry. The table has about 8.9% more slots than entries, so
// a cache of k ≥ 256 entries takes ≤ 8.85 bytes per entry (9.8 at k = 100). At
// that load linear probing with circular chains (the structure the study
// names) costs ~85 probes per insert, so the slots are grouped in buckets of
// eight and each fingerprint has two candidate buckets (the emptier one on
// insert, cuckoo displacement when both are full): a lookup reads at most two
// cache lines and compares without branches. See ctable.go. The CLOCK hand
// sweeps slot 0 of every bucket, then slot 1 of every bucket, and so on (so
// that consecutive evictions free slots in different buckets, where new
// fingerprints find them), so the clock order is that slot order rather than
// insertion order; an entry is inserted with its mark set so that it survives
// one sweep, as a freshly loaded page does in textbook CLOCK.
// The tests bound the difference against textbook CLOCK.
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
