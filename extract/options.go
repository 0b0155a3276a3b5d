package extract

import (
	"errors"
	"fmt"
)

// Options bound the work and memory spent on one document. The zero value
// means "defaults" (see EnsureDefaults).
type Options struct {
	// MaxBytes stops reading the document after this many (raw) bytes.
	// Default 16 MiB (the fetcher's body cap).
	MaxBytes int64
	// MaxLinks stops extraction after this many links are emitted.
	// Default 10,000.
	MaxLinks int
	// MaxAttrLen skips attribute values longer than this (bytes). Default
	// 8 KiB (a URL over the filter's 2 KiB cap is dropped anyway; srcset
	// lists of many candidates still fit).
	MaxAttrLen int
	// MaxTokenBytes caps the tokenizer's buffer for one token (a huge tag
	// or text run); beyond it extraction stops. Default 4 MiB.
	MaxTokenBytes int
	// KeepDuplicates emits every occurrence of a URL; by default each
	// distinct URL is emitted once per document (the first occurrence).
	KeepDuplicates bool
	// RobotsToken is the crawler's robots token (fetcher.Options.
	// RobotsToken, e.g. "sextant"): a <meta name=TOKEN> is read like
	// <meta name=robots> (Result.Robots). "" reads only the latter.
	// Letters, digits, '_' and '-'; matched ASCII case-insensitively.
	RobotsToken string
	// FollowNoFollow emits the links of <a>, <area> and <form> elements
	// whose rel holds "nofollow" like any other. By default they are not
	// emitted and are counted in Result.NoFollow.
	FollowNoFollow bool
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.MaxBytes == 0 {
		o.MaxBytes = 16 << 20
	}
	if o.MaxLinks == 0 {
		o.MaxLinks = 10000
	}
	if o.MaxAttrLen == 0 {
		o.MaxAttrLen = 8 << 10
	}
	if o.MaxTokenBytes == 0 {
		o.MaxTokenBytes = 4 << 20
	}
}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	var errs []error
	if o.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxBytes %d < 0", ErrInvalidOptions, o.MaxBytes))
	}
	if o.MaxLinks < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxLinks %d < 0", ErrInvalidOptions, o.MaxLinks))
	}
	if o.MaxAttrLen < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxAttrLen %d < 0", ErrInvalidOptions, o.MaxAttrLen))
	}
	if o.MaxTokenBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxTokenBytes %d < 0", ErrInvalidOptions, o.MaxTokenBytes))
	}
	if o.RobotsToken != "" && !isProductToken(o.RobotsToken) {
		errs = append(errs, fmt.Errorf("%w: RobotsToken %q: want letters, digits, '_' and '-'", ErrInvalidOptions, o.RobotsToken))
	}
	return errors.Join(errs...)
}
