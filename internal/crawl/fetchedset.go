package crawl

import "sort"

// CountFetches adds each fetched URL of es (robots lines excluded: no
// request was sent for them) to count.
func CountFetches(es []LogEntry, count map[string]int) {
	for _, e := range es {
		if e.Outcome != OutcomeRobots {
			count[e.URL]++
		}
	}
}

// CheckFetched compares the URLs of count with a ground truth (check gets
// them sorted) and returns how many were distinct, how many fetched more
// than once, and check's error text cut to 400 bytes ("" when equal).
func CheckFetched(count map[string]int, check func(sorted []string) error) (distinct, twice int, diff string) {
	fetched := make([]string, 0, len(count))
	for u, c := range count {
		fetched = append(fetched, u)
		if c > 1 {
			twice++
		}
	}
	sort.Strings(fetched)
	if err := check(fetched); err != nil {
		diff = err.Error()
		if len(diff) > 400 {
			diff = diff[:400] + "…"
		}
	}
	return len(fetched), twice, diff
}
