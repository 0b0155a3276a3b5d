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
