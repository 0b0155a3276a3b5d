package mrc

import "fmt"

// MinRequests is the fewest requests a curve must have seen for its sizing
// advice to be given. Below it the curve mostly shows cold misses: a run
// of a few thousand links has not refilled even the default front caches
// (512 entries × 32 workers) once, so every size "misses" about as much
// and the knee and the 20% size are noise. The one definition: the report
// and the status page both ask Withheld.
const MinRequests = 20_000

// Withheld says why advice from a curve over requests requests is withheld,
// or "" when it may be given.
func Withheld(requests uint64) string {
	if requests >= MinRequests {
		return ""
	}
	return fmt.Sprintf("withheld: the curve has seen %d requests, fewer than the %d it needs to mean anything (mrc.MinRequests)", requests, MinRequests)
}

// Counted is a curve source that knows how many requests it observed
// (Shared and Estimator are).
type Counted interface{ Requests() uint64 }
