package revisit

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"
)

// Defaults of Options (the node's are stated in internal/crawl/defaults.go).
const (
	DefaultMin    = time.Hour
	DefaultMax    = 30 * 24 * time.Hour
	DefaultShrink = 0.5
	DefaultGrow   = 2.0
)

// ModeAdaptive is the --revisit value that selects the adaptive interval.
const ModeAdaptive = "adaptive"

// ErrInvalidOptions wraps the problems Validate finds.
var ErrInvalidOptions = errors.New("revisit: invalid options")

// Options configure the revisit schedule. The zero value is off.
type Options struct {
	// Interval is the fixed revisit interval; with Adaptive it is the
	// first interval of a URL (default: the geometric mean of Min and Max).
	Interval time.Duration
	// Adaptive halves (Shrink) a URL's interval when its page changed and
	// doubles it (Grow) when not, within [Min, Max].
	Adaptive bool
	Min, Max time.Duration
	// Shrink (< 1) and Grow (> 1) are the adaptive factors; defaults 0.5, 2.
	Shrink, Grow float64
	// Logger receives rare events. Default: discard.
	Logger *slog.Logger
}

// Enabled reports whether URLs are revisited at all.
func (o *Options) Enabled() bool { return o.Interval > 0 || o.Adaptive }

// Parse parses a --revisit value: "" or "off" (no revisits), "adaptive",
// or a positive duration (fixed interval).
func Parse(s string) (interval time.Duration, adaptive bool, err error) {
	switch s = strings.TrimSpace(s); s {
	case "", "off", "0":
		return 0, false, nil
	case ModeAdaptive:
		return 0, true, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, false, fmt.Errorf("%w: --revisit %q: want off, adaptive or a positive duration", ErrInvalidOptions, s)
	}
	return d, false, nil
}

// EnsureDefaults fills the zero fields that need a value.
func (o *Options) EnsureDefaults() {
	if o.Min == 0 {
		o.Min = DefaultMin
	}
	if o.Max == 0 {
		o.Max = DefaultMax
	}
	if o.Shrink == 0 {
		o.Shrink = DefaultShrink
	}
	if o.Grow == 0 {
		o.Grow = DefaultGrow
	}
	if o.Adaptive && o.Interval == 0 && o.Min > 0 && o.Max >= o.Min {
		o.Interval = time.Duration(math.Sqrt(float64(o.Min) * float64(o.Max)))
	}
}

// Validate reports every invalid field of an enabled schedule.
func (o *Options) Validate() error {
	if !o.Enabled() {
		return nil
	}
	var errs []error
	if o.Interval < 0 {
		errs = append(errs, fmt.Errorf("%w: interval %v < 0", ErrInvalidOptions, o.Interval))
	}
	if o.Adaptive {
		if o.Min <= 0 || o.Max < o.Min {
			errs = append(errs, fmt.Errorf("%w: bounds [%v, %v]: want 0 < min ≤ max", ErrInvalidOptions, o.Min, o.Max))
		}
		if !(o.Shrink > 0 && o.Shrink < 1) || !(o.Grow > 1) || math.IsInf(o.Grow, 1) {
			errs = append(errs, fmt.Errorf("%w: factors shrink %v, grow %v: want 0 < shrink < 1 < grow", ErrInvalidOptions, o.Shrink, o.Grow))
		}
	}
	return errors.Join(errs...)
}
