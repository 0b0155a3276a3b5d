package termsafe

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://a.test/x?y=1", "http://a.test/x?y=1"},
		{"café ünïcode 日本", "café ünïcode 日本"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"bell\a", `bell\a`},
		{"two\nlines\r", `two\nlines\r`},
		{"tab\there", `tab\there`},
		{"del\x7f", `del\x7f`},
		{"csi\u009b31m", `csi\u009b31m`},
		{"raw\x9b31m", `raw\x9b31m`},
		{"bidi\u202egnp.exe", `bidi\u202egnp.exe`},
		{"nul\x00", `nul\x00`},
		{"bad\xffutf8", `bad\xffutf8`},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if Printable(tc.in) != (tc.in == tc.want) {
			t.Errorf("Printable(%q) = %v", tc.in, Printable(tc.in))
		}
	}
	if got := Text("line 1\n\tline 2\x1b]0;title\x07"); got != "line 1\n\tline 2\\x1b]0;title\\a" {
		t.Errorf("Text kept or escaped the wrong characters: %q", got)
	}
}

// Whatever the input, the output holds no control character and no byte
// that is not UTF-8 (Text: bar newline and tab).
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a\x1b[31m", "\xff\xfe", "\u009b", "\u202e", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{String(s), strings.NewReplacer("\n", "", "\t", "").Replace(Text(s))} {
			if !Printable(out) {
				t.Fatalf("escape(%q) = %q is not printable", s, out)
			}
		}
		if Printable(s) && String(s) != s {
			t.Fatalf("printable %q changed to %q", s, String(s))
		}
	})
}
