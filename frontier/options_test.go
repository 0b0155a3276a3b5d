package frontier

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// A politeness factor that is not a finite number ≥ 0 turns every delay
// into garbage (NaN × d, +Inf × d overflow the Duration), and a negative
// delay or back-off is never meant: Validate refuses them and names the
// field.
func TestOptionsValidateRefusesNonFiniteAndNegative(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Factor: math.NaN()}, "Factor"},
		{Options{Factor: math.Inf(1)}, "Factor"},
		{Options{Factor: math.Inf(-1)}, "Factor"},
		{Options{MinDelay: -time.Second}, "MinDelay"},
		{Options{MaxDelay: -time.Second}, "MaxDelay"},
		{Options{MaxCrawlDelay: -time.Second}, "MaxCrawlDelay"},
		{Options{FailureBackoff: -time.Second}, "FailureBackoff"},
		{Options{MaxFailureBackoff: -time.Second}, "MaxFailureBackoff"},
		{Options{BorrowHold: -time.Second}, "BorrowHold"},
		{Options{BorrowPoll: -time.Second}, "BorrowPoll"},
		{Options{CacheSize: -1}, "CacheSize"},
	} {
		o := tc.o
		o.EnsureDefaults()
		err := o.Validate()
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want ErrInvalidOptions naming %s", tc.want, err, tc.want)
		}
	}
}

// An explicit Factor 0 means no delay proportional to the fetch time: it
// used to be replaced by the default 10 (so `crawler crawl --factor 0`
// rested 10 × the fetch time). A zero-value Options still gets 10.
func TestFactorZeroWhenSet(t *testing.T) {
	fromDefaults := DefaultOptions()
	fromDefaults.Factor, fromDefaults.MinDelay = 0, 0
	for _, tc := range []struct {
		name string
		o    Options
		want time.Duration // delay after a fetch of 1 s
	}{
		{"zero value", Options{}, 10 * time.Second},
		{"FactorSet, 0", Options{FactorSet: true}, 0},
		{"FactorSet, 2", Options{Factor: 2, FactorSet: true}, 2 * time.Second},
		{"DefaultOptions", DefaultOptions(), 10 * time.Second},
		{"DefaultOptions, Factor 0", fromDefaults, 0},
	} {
		o := tc.o
		o.MaxDelay = time.Hour
		o.EnsureDefaults()
		if err := o.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := politeDelay(&o, Result{Duration: time.Second}, 0); got != tc.want {
			t.Errorf("%s: delay after a 1 s fetch = %v, want %v (Factor %g)", tc.name, got, tc.want, o.Factor)
		}
	}
}
