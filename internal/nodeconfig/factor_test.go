package nodeconfig

import (
	"strings"
	"testing"
)

// "politeness": {"factor": 0} reaches the frontier as 0 (no delay
// proportional to the fetch time); frontier.Options.EnsureDefaults used to
// turn it into the default 10.
func TestFactorZeroReachesFrontier(t *testing.T) {
	for _, tc := range []struct {
		json string
		want float64
	}{
		{`"factor": 0`, 0},
		{`"factor": 5`, 5},
	} {
		c, err := Parse([]byte(strings.Replace(good, `"factor": 5`, tc.json, 1)))
		if err != nil {
			t.Fatal(err)
		}
		fo := c.nodeOptions(nil, nil).Frontier
		fo.EnsureDefaults()
		if fo.Factor != tc.want {
			t.Errorf("%s: frontier Factor %g, want %g", tc.json, fo.Factor, tc.want)
		}
	}
	c, err := Parse([]byte(strings.Replace(good, `, "factor": 5`, ``, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if fo := c.nodeOptions(nil, nil).Frontier; fo.Factor != 10 {
		t.Errorf("no factor given: frontier Factor %g, want the default 10", fo.Factor)
	}
}
