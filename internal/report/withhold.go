package report

import "github.com/sextant-crawler/sextant/internal/mrc"

// withhold marks a as withheld when its curve saw too few requests to
// mean anything (mrc.Withheld); a source that cannot say how many it saw
// is trusted.
func withhold(a *mrc.Advice, c Curves) {
	if n, ok := c.(mrc.Counted); ok {
		a.Withheld = mrc.Withheld(n.Requests())
	}
}
