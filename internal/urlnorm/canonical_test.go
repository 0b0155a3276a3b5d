package urlnorm

import "testing"

// TestCanonicalMatchesParse: for the canonical form of every fuzz seed
// (against several bases), Canonical and Parse agree on every component.
func TestCanonicalMatchesParse(t *testing.T) {
	bases := []string{"http://example.com/a/b/c", "https://Ex.org:8443/", "http://u:p@h/dir/?q", "http://[::1]:81/x"}
	n := 0
	for _, bs := range bases {
		b, err := Parse(bs)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range fuzzSeeds {
			out, err := AppendResolved(nil, b, ref)
			if err != nil {
				continue
			}
			s := string(out)
			p, err := Parse(s)
			if err != nil {
				t.Fatalf("Parse(%q): %v", s, err)
			}
			c := Canonical(s)
			if c.String() != p.String() || c.Scheme() != p.Scheme() || c.Host() != p.Host() || c.Hostname() != p.Hostname() ||
				c.Port() != p.Port() || c.Path() != p.Path() || c.RawQuery() != p.RawQuery() || c.HasHost() != p.HasHost() {
				t.Errorf("Canonical(%q) = %+v, Parse = %+v", s, c, p)
			}
			n++
		}
	}
	if n < 50 {
		t.Fatalf("only %d cases", n)
	}
}
