package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/mrc"
)

// countedCurve is a curve that says how many requests it saw.
type countedCurve struct {
	fixedCurve
	n uint64
}

func (c countedCurve) Requests() uint64 { return c.n }

// The cache-size advice is withheld, with the reason, below
// mrc.MinRequests requests, and given from there on.
func TestAdviceWithheldBelowMinRequests(t *testing.T) {
	curve := fixedCurve{{K: 1, MissRatio: 0.9}, {K: 64, MissRatio: 0.5}, {K: 4096, MissRatio: 0.1}}
	for _, n := range []uint64{mrc.MinRequests - 1, mrc.MinRequests} {
		in := []Input{{Stats: crawl.Stats{ID: "n1", LinksLocal: n}, Front: countedCurve{curve, n},
			Cache: CacheConfig{Workers: 2, CachePerWorker: 512}}}
		r := Build(KindCrawl, in, time.Second)
		var buf bytes.Buffer
		r.WriteText(&buf, "t")
		withheld := strings.Contains(buf.String(), "n1 front (DUE lookups): now 512/worker; advice withheld: the curve has seen ")
		knee := strings.Contains(buf.String(), "knee")
		if got := r.PerNode[0].FrontAdvice.Withheld != ""; got != (n < mrc.MinRequests) || withheld != got || knee == got {
			t.Errorf("%d requests: withheld %v (text %v, knee %v):\n%s", n, got, withheld, knee, buf.String())
		}
	}
}
