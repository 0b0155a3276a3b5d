package demo

import (
	"errors"
	"testing"

	"github.com/sextant-crawler/sextant/frontier"
)

// The demo takes the node's dispatch by default, passes a given one on to
// the report's config, and refuses an unknown one.
func TestDemoDispatchOption(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	if o.Dispatch != frontier.DispatchAny {
		t.Errorf("default dispatch %q, want %q", o.Dispatch, frontier.DispatchAny)
	}
	o.Dispatch = frontier.DispatchHostAffine
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if c := o.cacheConfig(); c.Dispatch != frontier.DispatchHostAffine {
		t.Errorf("report config dispatch %q", c.Dispatch)
	}
	o.Dispatch = "hash"
	if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("dispatch hash: %v", err)
	}
}
