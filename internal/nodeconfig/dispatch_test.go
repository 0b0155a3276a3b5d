package nodeconfig

import (
	"errors"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/frontier"
)

// "dispatch" reaches the frontier's options; without it the node's default
// (any) stands; an unknown mode is refused naming the key.
func TestDispatchKey(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{``, frontier.DispatchAny},
		{`"dispatch": "host-affine", `, frontier.DispatchHostAffine},
	} {
		c, err := Parse([]byte(strings.Replace(good, `"workers": 16,`, tc.json+`"workers": 16,`, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := c.nodeOptions(nil, nil).Frontier.Dispatch; got != tc.want {
			t.Errorf("%q: Dispatch %q, want %q", tc.json, got, tc.want)
		}
	}
	c, err := Parse([]byte(strings.Replace(good, `"workers": 16,`, `"dispatch": "random", "workers": 16,`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "dispatch") {
		t.Errorf("dispatch random: %v", err)
	}
}
