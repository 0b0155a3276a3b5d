package nodeconfig

import (
	"strings"
	"testing"
	"time"
)

// The revisit keys reach the node's options; without them the crawl is
// not continuous; bad values are reported with their key.
func TestRevisitKeys(t *testing.T) {
	withKeys := func(keys string) string { return strings.Replace(good, `"workers": 16,`, `"workers": 16, `+keys, 1) }
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if o := c.nodeOptions(nil, nil).Revisit; o.Enabled() {
		t.Fatalf("no revisit key: %+v, want off", o)
	}
	c, err = Parse([]byte(withKeys(`"revisit": "adaptive", "revisit_min": "10m", "revisit_max": "48h",`)))
	if err != nil {
		t.Fatal(err)
	}
	if o := c.nodeOptions(nil, nil).Revisit; !o.Adaptive || o.Min != 10*time.Minute || o.Max != 48*time.Hour {
		t.Fatalf("adaptive: %+v", o)
	}
	c, err = Parse([]byte(withKeys(`"revisit": "6h",`)))
	if err != nil {
		t.Fatal(err)
	}
	if o := c.nodeOptions(nil, nil).Revisit; o.Adaptive || o.Interval != 6*time.Hour {
		t.Fatalf("fixed: %+v", o)
	}
	for _, keys := range []string{`"revisit": "sometimes",`, `"revisit": "adaptive", "revisit_min": "2h", "revisit_max": "1h",`} {
		c, err := Parse([]byte(withKeys(keys)))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "revisit") {
			t.Errorf("%s: Validate %v, want a revisit error", keys, err)
		}
	}
}
