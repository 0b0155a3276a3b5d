package urlnorm

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestHostileInputsAreCheap: long hostile references stay cheap (the
// reference parser is quadratic in path segments; see maxSlowSegments).
// Work is measured as bytes allocated (deterministic, unlike wall time): a
// quadratic blow-up allocates tens of MB for an 8 KB input.
func TestHostileInputsAreCheap(t *testing.T) {
	base := mustParse(t, "http://example.com/a/b")
	for _, in := range []string{
		strings.Repeat("é", 8000),
		"http://" + strings.Repeat("é", 8000) + "/",
		"http://" + strings.Repeat("a.", 4000) + "/",
		strings.Repeat("../", 2700),
		strings.Repeat("a/", 4000),
		strings.Repeat("é/", 4000),
		"?" + strings.Repeat("é", 8000),
		"http://[" + strings.Repeat("1:", 4000) + "]/",
		strings.Repeat("%2e%2e/", 1100),
		strings.Repeat("\t", 8000),
		"http://h/" + strings.Repeat("\\", 8000),
		"http://h/?" + strings.Repeat("\\", 8000),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Resolve(base, in)
		runtime.ReadMemStats(&after)
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%.20q: %v", in, err)
		}
		perByte := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(in))
		t.Logf("%.20q: %.0f bytes allocated per input byte, err=%v", in, perByte, err != nil)
		if perByte > 400 {
			t.Errorf("Resolve(%.20q…) allocated %.0f bytes per input byte", in, perByte)
		}
	}
}
