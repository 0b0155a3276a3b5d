package onehost

import (
	"context"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/logging"
)

// The quick version of bench/cmd/onehost: two rounds of a depth-2 crawl of
// the wiki mirror over TLS, each exact, each with a loop over the same
// URLs and a ratio, and a loop over h2 (which fails unless nginx answers
// it over h2) with its ratio. (Its figure is not asserted: on a shared 2-core
// machine a quick run is noise; BENCHMARKS.md has the full run.)
func TestRunQuick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Work: t.TempDir(), Rounds: 2, MaxDepth: 2, DUEFlush: 50 * time.Millisecond, LoopH2: true, Logger: logging.Test(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rounds) != 2 || rep.Reachable < 100 {
		t.Fatalf("report %+v", rep)
	}
	for i, r := range rep.Rounds {
		if r.SextantPages != rep.Reachable || r.LoopPages != rep.Reachable || r.LoopH2Pages != rep.Reachable ||
			!(r.Ratio > 0) || !(r.RatioH2 > 0) || r.SextantFirst != (i == 0) {
			t.Errorf("round %d: %+v, want %d pages each and a ratio", i+1, r, rep.Reachable)
		}
	}
	t.Logf("median ratio %.2f over %d URLs", rep.MedianRatio, rep.Reachable)
}
