package crawl

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// The library refuses the same values, whatever path built the Options
// (the node's JSON config, the demo, a program).
func TestOptionsValidateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(o *Options)
	}{
		{"Workers", func(o *Options) { o.Workers = MaxWorkers + 1 }},
		{"Workers", func(o *Options) { o.Workers = 100_000 }},
		{"DUEFlushInterval", func(o *Options) { o.DUEFlushInterval = -time.Second }},
		{"DUEBuffer", func(o *Options) { o.DUEBuffer = -1 }},
		{"ID", func(o *Options) { o.ID = "n\x1b[31m" }},
		{"Factor", func(o *Options) { o.Frontier.Factor = math.NaN() }},
		{"Factor", func(o *Options) { o.Frontier.Factor = math.Inf(1) }},
		{"MinDelay", func(o *Options) { o.Frontier.MinDelay = -time.Second }},
		{"FetchTimeout", func(o *Options) { o.Fetcher.FetchTimeout = -time.Second }},
		{"UserAgent", func(o *Options) { o.Fetcher.UserAgent = "x\x1b" }},
	} {
		o := Options{DataDir: t.TempDir()}
		tc.set(&o)
		o.EnsureDefaults()
		err := o.Validate()
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: Validate = %v, want ErrInvalidOptions naming it", tc.name, err)
		}
		if _, err := Open(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: Open = %v, want ErrInvalidOptions", tc.name, err)
		}
	}
	o := Options{DataDir: t.TempDir(), Workers: MaxWorkers}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Errorf("Workers = MaxWorkers: %v", err)
	}
}
