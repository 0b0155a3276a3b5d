// Package fingerprint computes the 64-bit fingerprints that identify URLs in
// every cache, the DUE, the host splitter and the traces.
//
// A fingerprint is the xxHash64 (github.com/cespare/xxhash/v2, seed 0) of the
// normalised URL's bytes. It is stable across processes and machines, so it
// may be stored on disk and sent to peers. Callers must normalise the URL
// first (see extract); fingerprints of two spellings of one URL differ.
//
// Collision probability: for n distinct URLs and a 64-bit hash the chance of
// at least one collision is about n²/2⁶⁵: ≈ 2.7×10⁻⁴ at 10⁸ URLs and ≈ 2.7% at
// 10⁹ URLs. A collision makes the DUE treat a new URL as seen, so one URL in
// about 2⁶⁴/n is lost; at 10⁹ URLs that is ~5×10⁻¹¹ of the crawl.
package fingerprint

import "github.com/cespare/xxhash/v2"

// URL returns the fingerprint of a normalised URL.
func URL(normalised string) uint64 { return xxhash.Sum64String(normalised) }

// Bytes returns the fingerprint of a normalised URL held as bytes; it equals
// URL(string(b)).
func Bytes(b []byte) uint64 { return xxhash.Sum64(b) }
