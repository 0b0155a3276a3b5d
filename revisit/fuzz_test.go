package revisit

import "testing"

// FuzzParse: Parse never panics, and what it accepts is off, adaptive or a
// positive interval.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "off", "adaptive", "1h", "-1s", "1e9h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		iv, ad, err := Parse(s)
		if err == nil && (iv < 0 || (ad && iv != 0)) {
			t.Fatalf("Parse(%q) = %v %v", s, iv, ad)
		}
	})
}
