package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// The report sums the nodes' steals and worker waits and divides the wait
// by workers × elapsed.
func TestReportDispatch(t *testing.T) {
	var in []Input
	for _, s := range []uint64{3, 4} {
		st := crawl.Stats{ID: "n"}
		st.Frontier.Steals, st.Frontier.NextWait = s, 10*time.Second
		in = append(in, Input{Stats: st, Cache: CacheConfig{Workers: 4, Dispatch: "host-affine"}})
	}
	r := Build(KindDemo, in, 10*time.Second)
	want := DispatchStats{Mode: "host-affine", Steals: 7, WaitSeconds: 20, IdleShare: 0.25, workerSecs: 80}
	if r.Dispatch != want {
		t.Fatalf("got %+v, want %+v", r.Dispatch, want)
	}
	var b bytes.Buffer
	r.WriteText(&b, "t")
	if l := "dispatch        host-affine: 7 steals; workers waited 20 s for URLs (25.0% of their time)"; !strings.Contains(b.String(), l) {
		t.Errorf("no line %q in\n%s", l, b.String())
	}
	if r := Build(KindCrawl, []Input{{Cache: CacheConfig{Workers: 1}}}, time.Second); r.Dispatch.Mode != "any" {
		t.Errorf("mode %q without a dispatch, want any", r.Dispatch.Mode)
	}
}
