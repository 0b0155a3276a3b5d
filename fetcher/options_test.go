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
