package cachesim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/cache/tracegen"
)

// Policy names, as Simulate and `crawler cachesim` spell them. The online
// ones are the cache package's; the others exist only here.
const (
	AlgoClock    = cache.AlgoClock
	AlgoRandom   = cache.AlgoRandom
	AlgoLRU      = cache.AlgoLRU
	AlgoInfinite = cache.AlgoInfinite
	AlgoStatic   = "static"
	AlgoMIN      = "min"
	// AlgoClockExact is textbook CLOCK (second chance) over k frames with a
	// hand in insertion order; a new entry is inserted unmarked, as in the
	// caching study's paper. AlgoClockExactMarked inserts it marked, as the
	// production CLOCK does. Both exist to measure that CLOCK's deviation.
	AlgoClockExact       = "clock-exact"
	AlgoClockExactMarked = "clock-exact-marked"
)

// Algorithms lists the policies Simulate runs by default, in display order.
// The exact CLOCKs are asked for by name (ParseAlgos, SimOptions.Algos).
var Algorithms = []string{AlgoClock, AlgoRandom, AlgoLRU, AlgoStatic, AlgoMIN, AlgoInfinite}

// Known lists every policy Simulate accepts.
var Known = append(append([]string(nil), Algorithms...), AlgoClockExact, AlgoClockExactMarked)

// ErrUnknownAlgo is returned for a policy name Simulate does not know.
var ErrUnknownAlgo = errors.New("cachesim: unknown algorithm")

// ParseAlgos splits a comma-separated list of algorithm names and checks them
// against Known. "all" or "" means Algorithms.
func ParseAlgos(s string) ([]string, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" || s == "all" {
		return append([]string(nil), Algorithms...), nil
	}
	var out []string
	seen := map[string]bool{}
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		ok := false
		for _, b := range Known {
			ok = ok || a == b
		}
		if !ok {
			return nil, fmt.Errorf("%w: %q (known: %s)", ErrUnknownAlgo, a, strings.Join(Known, ", "))
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out, nil
}

// mix64 is the hash that picks SampleRate's sample of fingerprints.
func mix64(z uint64) uint64 { return tracegen.Mix64(z) }
