package revisit

import (
	"math"
	"time"
)

// Verdict is what a fetch found, compared with the URL's history.
type Verdict uint8

// Verdicts.
const (
	First     Verdict = iota // no history: the URL's first fetch
	Changed                  // the digest differs from the last one
	Unchanged                // 304 Not Modified, or the same digest
	Failed                   // no usable answer (network error, 5xx, robots): the interval stays
)

func (v Verdict) String() string {
	return [...]string{"first", "changed", "unchanged", "failed"}[v]
}

// Observation is what one fetch of a URL saw.
type Observation struct {
	Time time.Time
	// Digest identifies the content: the payload digest of a 2xx body, or
	// a stand-in for other answers (status and Location), so that a page
	// that starts redirecting counts as changed.
	Digest string
	// NotModified: the server answered 304 to a conditional request.
	NotModified bool
	// Failed: no usable answer (see Failed).
	Failed bool
	// ETag and LastModified are the response's validators ("" if none).
	ETag, LastModified string
}

// History is what the schedule keeps per URL.
type History struct {
	// The frontier item to queue when due: URL as the frontier holds it
	// (with its annotations), politeness key, depth, priority.
	URL      string
	Host     string
	Depth    uint16
	Priority uint8

	Interval   time.Duration
	Due        time.Time
	LastFetch  time.Time
	LastChange time.Time
	// Digest, ETag and LastModified are the last 2xx answer's.
	Digest, ETag, LastModified string
	// Visits counts fetches (failed ones excepted), Changes those that
	// found the page changed: Cho & Garcia-Molina's n and X.
	Visits, Changes uint32
}

// Update returns h after the fetch ob, with its next due time, and what
// the fetch found. It is pure: the schedule's whole policy.
func (o *Options) Update(h History, ob Observation) (History, Verdict) {
	v := Unchanged
	switch {
	case ob.Failed:
		v = Failed
	case h.Visits == 0:
		v = First
	case ob.NotModified:
		v = Unchanged
	case ob.Digest != h.Digest:
		v = Changed
	}
	h.Interval = o.next(h.Interval, v)
	h.LastFetch, h.Due = ob.Time, ob.Time.Add(h.Interval)
	if v == Failed {
		return h, v
	}
	h.Visits++
	if v == First || v == Changed {
		h.LastChange = ob.Time
	}
	if v == Changed {
		h.Changes++
	}
	if !ob.NotModified {
		h.Digest, h.ETag, h.LastModified = ob.Digest, ob.ETag, ob.LastModified
	} else {
		// A 304 may repeat or update the validators.
		if ob.ETag != "" {
			h.ETag = ob.ETag
		}
		if ob.LastModified != "" {
			h.LastModified = ob.LastModified
		}
	}
	return h, v
}

// next is the interval after a fetch whose verdict is v.
func (o *Options) next(cur time.Duration, v Verdict) time.Duration {
	if !o.Adaptive {
		return o.Interval
	}
	switch {
	case cur <= 0 || v == First:
		cur = o.Interval
	case v == Changed:
		cur = time.Duration(float64(cur) * o.Shrink)
	case v == Unchanged:
		cur = time.Duration(min(float64(cur)*o.Grow, float64(math.MaxInt64/2)))
	}
	return min(max(cur, o.Min), o.Max)
}

// ChangeRate is Cho & Garcia-Molina's estimate of a page's change rate
// (changes per second) from n visits at a regular interval of which x found
// it changed: r = −ln((n − x + 0.5)/(n + 0.5)) / interval, the bias-reduced
// estimator of their section 4 (it stays finite when every visit found a
// change). 0 when n is 0 or the interval is not positive.
func ChangeRate(n, x uint32, interval time.Duration) float64 {
	if n == 0 || interval <= 0 {
		return 0
	}
	x = min(x, n)
	return -math.Log((float64(n-x)+0.5)/(float64(n)+0.5)) / interval.Seconds()
}
