package sitemap

import (
	"errors"
	"fmt"
)

// The protocol's per-file limits (sitemaps.org).
const (
	ProtocolMaxURLs  = 50_000
	ProtocolMaxBytes = 52_428_800
)

// Rule is the location rule applied to listed URLs (see the package doc).
type Rule uint8

const (
	// RulePath: same scheme and host as the base, path under the base's
	// directory (sitemaps.org's rule for a sitemap found anywhere).
	RulePath Rule = iota
	// RuleHost: same scheme and host as the base (a robots.txt
	// cross-submit: the base is the robots.txt URL).
	RuleHost
	// RuleNone: any http or https URL.
	RuleNone
)

// Options bound a parse. The zero value of a field means its default.
type Options struct {
	MaxURLs       int   // entries reported per file; default 50,000
	MaxBytes      int64 // decompressed bytes read per file; default 52,428,800
	MaxURLLength  int   // longer URLs are counted Invalid; default 2048
	MaxDepth      int   // XML element depth; default 16
	MaxTokenBytes int   // bytes of one XML token; default 64 KiB
	Rule          Rule  // location rule; default RulePath
}

// ErrOptions is wrapped by every error Validate returns.
var ErrOptions = errors.New("sitemap: invalid options")

// DefaultOptions are the protocol's limits.
func DefaultOptions() Options {
	var o Options
	o.EnsureDefaults()
	return o
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.MaxURLs == 0 {
		o.MaxURLs = ProtocolMaxURLs
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = ProtocolMaxBytes
	}
	if o.MaxURLLength == 0 {
		o.MaxURLLength = 2048
	}
	if o.MaxDepth == 0 {
		o.MaxDepth = 16
	}
	if o.MaxTokenBytes == 0 {
		o.MaxTokenBytes = 64 << 10
	}
}

// Validate reports every problem of (defaulted) options.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrOptions}, args...)...))
	}
	if o.MaxURLs < 1 {
		bad("MaxURLs %d < 1", o.MaxURLs)
	}
	if o.MaxBytes < 1 {
		bad("MaxBytes %d < 1", o.MaxBytes)
	}
	if o.MaxURLLength < 16 {
		bad("MaxURLLength %d < 16", o.MaxURLLength)
	}
	if o.MaxDepth < 3 {
		bad("MaxDepth %d < 3 (a urlset needs 3)", o.MaxDepth)
	}
	if o.MaxTokenBytes < o.MaxURLLength {
		bad("MaxTokenBytes %d < MaxURLLength %d", o.MaxTokenBytes, o.MaxURLLength)
	}
	if o.Rule > RuleNone {
		bad("unknown Rule %d", o.Rule)
	}
	return errors.Join(errs...)
}
