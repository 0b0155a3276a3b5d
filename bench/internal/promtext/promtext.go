// Package promtext reads figures out of a Prometheus text exposition (a
// node's /metrics page) for the bench harnesses.
package promtext

import (
	"strconv"
	"strings"
)

// Sum adds the values of every sample of metric name (any labels).
func Sum(text, name string) float64 {
	var s float64
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, name) {
			continue
		}
		rest := l[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue // another metric whose name starts with name
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			s += v
		}
	}
	return s
}
