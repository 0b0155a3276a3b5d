// Package fingerprint computes the 64-bit fingerprints that identify URLs in
// every cache, the DUE, the host splitter and the traces.
//
// A fingerprint is the xxHash64 (github.com/cespare/xxhash/v2, seed 0) of the
// normalised URL's bytes. It is stable across processes and machines, so it
// may be stored on disk and sent to peers. Callers must normalise the URL
// first (see extract); fingerprints of two spellings of one URL differ.
//
// Why xxHash64 rather than a Rabin fingerprint (Mercator's choice) or FNV-1a:
// it is 3–7× faster on real URLs and every output bit depends on every input
// bit. BenchmarkURL, over the 18,149 distinct link URLs of the wiki mirror in
// ../shared/testdata (70.7 bytes on average), measured 16–17 CPU-ns per URL
// for xxHash64, 54–56 for FNV-1a 64 (hash/fnv or inline: one multiply per
// byte), 107–110 for a table-driven Rabin fingerprint (one table look-up per
// byte, as Mercator computed it) and 74–76 for CRC-64 (hash/crc64, a Rabin
// fingerprint eight bytes at a time) (docs/bench/cache.md). A Rabin
// fingerprint's advantage, a collision bound provable for a randomly chosen
// polynomial, buys nothing here: fingerprints are not keyed against an
// adversary either way, and for non-adversarial URLs xxHash64's collisions
// behave as a random function's (it passes SMHasher). Its disadvantage is
// that it is linear with no avalanche: URLs differing in their last bit get
// fingerprints differing in their last bit (TestRabinMatchesDefinition), so
// every table indexing by fingerprint bits would have to mix them again.
// The collision odds below assume a random 64-bit function.
//
// Collision probability: for n distinct URLs and a 64-bit hash the chance of
// at least one collision is about 1 − exp(−n²/2⁶⁵): ≈ 2.7×10⁻⁴ at 10⁸ URLs
// and ≈ 2.7% at 10⁹ URLs. A collision makes the DUE treat a new URL as seen:
// the k-th new URL is lost with chance about k/2⁶⁴ (≈ 5.4×10⁻¹¹ for the last
// of 10⁹), so a crawl of 10⁹ URLs expects to lose n²/2⁶⁵ ≈ 0.027 of them.
package fingerprint

import "github.com/cespare/xxhash/v2"

// URL returns the fingerprint of a normalised URL.
func URL(normalised string) uint64 { return xxhash.Sum64String(normalised) }

// Bytes returns the fingerprint of a normalised URL held as bytes; it equals
// URL(string(b)).
func Bytes(b []byte) uint64 { return xxhash.Sum64(b) }
