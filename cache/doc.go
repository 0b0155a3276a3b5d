// Package cache holds caches of 64-bit URL fingerprints and the simulator that
// measures them.
//
// Policies: CLOCK and RANDOM (a scatter table with circular chains, as the
// caching study recommends), LRU, STATIC (preloaded with the most frequent
// fingerprints), MIN (Belady's clairvoyant optimum, offline) and INFINITE.
//
// Design: Broder, Najork & Wiener, "Efficient URL Caching for World Wide Web
// Crawling" (WWW 2003).
package cache
