package nodeconfig

import (
	"errors"
	"strings"
	"testing"
)

// "warc_compression" reaches the node's WARC options; without it the
// node's default (fast) stands; an unknown setting is refused by Validate,
// naming the key, before the node opens anything.
func TestWARCCompressionKey(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{``, "fast"},
		{`"warc_compression": "store", `, "store"},
		{`"warc_compression": "9", `, "9"},
	} {
		c, err := Parse([]byte(strings.Replace(good, `"workers": 16,`, tc.json+`"workers": 16,`, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := c.nodeOptions(nil, nil).WARCArchive.Compression; got != tc.want {
			t.Errorf("%q: Compression %q, want %q", tc.json, got, tc.want)
		}
	}
	c, err := Parse([]byte(strings.Replace(good, `"workers": 16,`, `"warc_compression": "zstd", "workers": 16,`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "warc_compression") {
		t.Errorf("warc_compression zstd: %v", err)
	}
}
