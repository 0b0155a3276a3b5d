package fetcher

import (
	"strings"
	"testing"
)

// A User-Agent that is not a valid header value (a control character) would
// make every request fail at send time: Validate refuses it up front.
func TestOptionsValidateUserAgent(t *testing.T) {
	for _, ua := range []string{"bot\x1b[31m", "bot\x00", "bot\r\nX-Evil: 1", "bot\x7f"} {
		o := Options{UserAgent: ua}
		o.EnsureDefaults()
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "UserAgent") {
			t.Errorf("UserAgent %q: Validate = %v, want an error naming UserAgent", ua, err)
		}
	}
	o := Options{UserAgent: "Sextant/0.1 (+https://example.org/bot; tab\tok)"}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Errorf("a valid User-Agent: %v", err)
	}
}

// The idle-connection cap's default leaves three quarters of the
// descriptors to everything else.
func TestDefaultMaxIdleConns(t *testing.T) {
	for _, c := range []struct{ nofile, want int }{
		{0, DefaultMaxIdleConns},
		{1 << 20, DefaultMaxIdleConns},
		{4 * DefaultMaxIdleConns, DefaultMaxIdleConns},
		{4096, 1024},
		{1024, 256},
		{20, 16},
	} {
		if got := defaultMaxIdleConns(c.nofile); got != c.want {
			t.Errorf("defaultMaxIdleConns(%d) = %d, want %d", c.nofile, got, c.want)
		}
	}
	var o Options
	o.EnsureDefaults()
	if want := defaultMaxIdleConns(openFileLimit()); o.MaxIdleConns != want || want < 16 {
		t.Errorf("EnsureDefaults: MaxIdleConns %d, want %d", o.MaxIdleConns, want)
	}
}
