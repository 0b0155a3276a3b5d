package crawl

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	engine "github.com/sextant-crawler/sextant/internal/crawl"
)

// A zero Options takes DefaultOptions' values, and those are the engine's
// (the flags' and the node config's: TestDefaultsAgree).
func TestZeroOptionsAreDefaults(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	d := DefaultOptions()
	d.EnsureDefaults()
	if diff := cmp.Diff(d, o, cmpopts.IgnoreFields(Options{}, "Logger")); diff != "" {
		t.Errorf("zero Options after EnsureDefaults differ from DefaultOptions (-want +got):\n%s", diff)
	}
	e, err := (&Options{DataDir: t.TempDir(), MinDelay: -1}).engine()
	if err != nil {
		t.Fatal(err)
	}
	ed := engine.DefaultOptions()
	if e.Frontier.MinDelay != 0 {
		t.Errorf("MinDelay -1: engine MinDelay %v, want none", e.Frontier.MinDelay)
	}
	if e.MaxPagesPerHost != ed.MaxPagesPerHost || e.Frontier.HostBudget.Hard != ed.MaxPagesPerHost || e.CachePerWorker != ed.CachePerWorker {
		t.Errorf("engine options: %d pages per host (frontier %+v), cache %d; want the engine's defaults", e.MaxPagesPerHost, e.Frontier.HostBudget, e.CachePerWorker)
	}
}

func TestOpenRefuses(t *testing.T) {
	for name, o := range map[string]Options{
		"no DataDir":   {},
		"workers":      {DataDir: t.TempDir(), Workers: 100_000},
		"bad Domains":  {DataDir: t.TempDir(), Domains: []string{"not a domain"}},
		"bad UA":       {DataDir: t.TempDir(), UserAgent: "bot\x1b[2J"},
		"budget < -1":  {DataDir: t.TempDir(), MaxPagesPerHost: -2},
		"negative max": {DataDir: t.TempDir(), MaxDelay: -1},
	} {
		c, err := Open(o)
		if err == nil {
			c.Close()
		}
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: Open = %v, want ErrInvalidOptions", name, err)
		}
	}
}
