// Package cachesim measures the caches of package cache offline: it reads and
// writes the binary fingerprint trace the host splitter logs (trace.go),
// simulates every policy at every cache size over a trace, and turns the
// miss-rate curve into the operator's answer (Recommend).
//
// Simulate computes LRU for all sizes in one pass by Mattson stack
// distances, MIN (Belady's clairvoyant optimum) for all sizes in one pass by
// the OPT stack kept as one heap per level between sizes (minstack.go),
// STATIC and INFINITE from frequency counts, and CLOCK and RANDOM per size
// with the production caches, in parallel; or, approximately, on a spatial
// sample of the fingerprints with SampleRate. It is deterministic for a
// given trace and options.
//
// Beside the production CLOCK (a scatter table with a hand in slot order and
// marked inserts, see cache.Clock) it runs two exact textbook CLOCKs,
// clock-exact (new entries unmarked, as in the paper) and clock-exact-marked,
// so that the production CLOCK's deviation can be measured on any trace.
//
// Design: Broder, Najork & Wiener, "Efficient URL Caching for World Wide Web
// Crawling" (WWW 2003).
package cachesim
