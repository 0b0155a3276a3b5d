// Package mrc estimates a cache's miss-ratio curve online, from the live
// stream of fingerprints the cache is asked about, with SHARDS (Waldspurger,
// Park, Garthwaite & Ahmad, "Efficient MRC Construction with SHARDS",
// FAST'15): spatially hashed sampling (a fingerprint is kept when
// hash(fp) mod P < T), LRU reuse (stack) distances over the sample with a
// Fenwick tree, scaled back by 1/R (R = T/P), and miniature simulations
// (caches scaled down by R on the same kind of sample) for CLOCK and RANDOM.
//
// # Tiers
//
// One sampling rate cannot serve cache sizes from 1 to 2²⁵: at rate R every
// reuse distance below about 1/R collapses to zero. An Estimator therefore
// keeps three LRU estimators and stitches their curves:
//
//   - tier A (k ≤ 64): time sampling. The last RingLen fingerprints are kept
//     in a ring (one store per request); about one request in TimeSample has
//     its exact stack distance (up to 64) measured by scanning the ring.
//   - tier B (64 < k ≤ FineSamples/FineRate): fixed-rate SHARDS at FineRate
//     whose sample set is bounded by evicting the least recently used
//     sampled fingerprint (any distance it would have had is ≥ FineSamples,
//     beyond the tier's range), so its distances are exact within the sample.
//   - tier C (larger k, and every k > 64 while its rate is still above
//     FineRate, e.g. exact while the stream has ≤ MaxSamples distinct
//     fingerprints): fixed-size SHARDS (SHARDS_adj with s_max =
//     MaxSamples): the rate starts at 1 and is lowered as the sample set
//     grows by evicting the fingerprints with the largest hashes. Each sampled
//     reference is weighted by 1/R at the time it was seen.
//
// Miss ratios are normalised by the number of requests observed, not the
// number sampled (the SHARDS_adj correction: a popular fingerprint that
// happens to be sampled does not inflate the denominator).
//
// CLOCK and RANDOM above 2⁸ are miniature simulations with the cache
// package's own NewClock and NewRandom: caches of k·R entries fed the sample
// at rate MiniRate (for 2⁹ ≤ k ≤ 2¹⁶) and MiniRate/32 (k > 2¹⁶), the rate
// doubled where a miniature cache would hold fewer than MiniMin entries,
// next to a miniature LRU of the same size on the same sample; the reported
// point is the LRU estimate plus the miniature CLOCK (RANDOM) minus
// miniature LRU difference, which cancels most of the noise of which
// fingerprints happen to be sampled. Two miniature RANDOM caches with
// different seeds are averaged.
//
// Below 2⁹ the miniature caches would be too small or too costly, so:
//
//   - RANDOM at 2 ≤ k ≤ RingLen/4 (2⁸ with the defaults) comes from a model
//     over tier A's time samples: a request whose previous request for the
//     same fingerprint was L requests earlier hits a RANDOM cache of k
//     entries with probability (1−1/k)^(L·p), p the miss ratio (each miss
//     in between evicts it with probability 1/k), solved as a fixed point.
//     Given every reuse time this is within 0.003 of the exact curve on the
//     validation traces for k ≤ 2⁸; the time sampling adds its noise.
//   - CLOCK at k < 2⁹ is the LRU estimate (a documented approximation: on
//     the validation traces CLOCK misses 0–0.009 more than LRU there, and
//     the accuracy tests count that error in the MAE over 2⁰ … 2²⁵).
//   - k = 1 is the same for every algorithm.
//
// # Caller's duties and concurrency
//
// An Estimator is NOT safe for concurrent use: one goroutine (the one that
// owns the cache whose stream is observed) calls Observe; Curve reads the
// state and must not run concurrently with Observe. Shared wraps an Estimator
// with a mutex for the case where the stream comes from many goroutines or
// the status page reads curves while the stream is observed.
//
// Memory is fixed at construction (about 2.5 MB with the defaults for the
// three curves, 0.6 MB with Economy; see Bytes) and does not grow with the
// stream.
//
// # Cost
//
// Observe stores the fingerprint in the ring and, every 64 requests, does
// the sampling work of the last 64 in one loop: one multiply and compare
// per unsampled request, the tiers' work for the sampled few. Shared adds a
// mutex per call; feed it a page's links at once with ObserveBatch (the
// crawler does, through crawl.Options.FrontObserverBatch and
// RemoteObserverBatch; docs/bench/operator.md has the figures).
package mrc
