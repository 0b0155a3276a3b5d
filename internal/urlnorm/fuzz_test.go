package urlnorm

import (
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"http://Example.COM:80/a/./b/../c?x=1#frag",
	"https://example.com:443",
	"HTTP://h:0080/%2e%2E/x",
	"//other.example/p?q",
	"/abs/path?q= 'x'",
	"rel/../x/./y",
	"../../../up",
	"?only",
	"#only",
	"",
	"a b\"c<d>e`f{g}h^i|j",
	"http://h/a b?c d'e",
	"mailto:x@example.com",
	"javascript:void(0)",
	"http://[::1]:8080/",
	"http://192.168.0.1./",
	"http://xn--nxasmq6b.example/",
	"http://ex\tample.com/",
	"  http://example.com/  ",
	"http://user:pass@example.com/",
	"http:relative",
	"http:/one-slash",
	"http:\\\\back\\slash",
	"http://EXAMPLE.com./",
	"http://ex_ample.com/",
	"http://münchen.de/straße?q=ü",
	"http://h/%zz%",
	"data:text/html,<a>",
	"foo://host/ !\"$%&'()*+,-./:;<=>@[\\]^_`{|}~",
	"web+demo:/.//not-a-host/",
	"http://1.2.3.4.5/",
	"http://0x7f.1/",
	"http://a-.b/",
	"http://ab--cd.example/",
	"http://h:65536/",
	"http://h:/x",
}

// FuzzFastPath checks the fast path against the reference WHATWG parser:
// whenever the fast path accepts (base, ref), the reference parser must
// accept it too and produce the identical canonical string.
func FuzzFastPath(f *testing.F) {
	bases := []string{"http://example.com/a/b/c", "https://Ex.org:8443/", "http://h/dir/", "http://h", "https://h/a/b?q#f", "mailto:x"}
	for i, s := range fuzzSeeds {
		f.Add(bases[i%len(bases)], s)
	}
	f.Fuzz(func(t *testing.T, base, ref string) {
		var b *URL
		if w, err := parser.Parse(base); err == nil {
			b = fromWhatwg(w)
		}
		checkFast(t, b, ref)
		checkFast(t, nil, ref)
	})
}

func checkFast(t *testing.T, b *URL, ref string) {
	t.Helper()
	out, ok := fastResolve([]byte("prefix"), b, ref)
	if !strings.HasPrefix(string(out), "prefix") {
		t.Fatalf("fast path clobbered dst: %q", out)
	}
	if !ok {
		if string(out) != "prefix" {
			t.Fatalf("fast path declined but changed dst: %q", out)
		}
		return
	}
	got := string(out[len("prefix"):])
	want, err := slowResolve(b, ref)
	if err != nil {
		t.Fatalf("base=%v ref=%q: fast path gave %q, reference parser failed: %v", b, ref, got, err)
	}
	if got != want.s {
		t.Fatalf("base=%v ref=%q: fast path %q, reference parser %q", b, ref, got, want.s)
	}
}

// FuzzNormalizeIdempotent checks Normalize(Normalize(x)) == Normalize(x),
// that the reference parser agrees on the second pass, and that the
// component accessors partition the canonical string.
func FuzzNormalizeIdempotent(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n1, err := Normalize(raw)
		if err != nil {
			return
		}
		n2, err := Normalize(n1)
		if err != nil {
			t.Fatalf("Normalize(%q) = %q, which does not normalise: %v", raw, n1, err)
		}
		if n1 != n2 {
			t.Fatalf("not idempotent: %q -> %q -> %q", raw, n1, n2)
		}
		w, err := parser.Parse(n1)
		if err != nil || w.Href(true) != n1 {
			t.Fatalf("reference parser disagrees on %q: %v %v", n1, w, err)
		}
		checkParts(t, mustParse(t, n1))
	})
}

func mustParse(t testing.TB, s string) *URL {
	t.Helper()
	u, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return u
}

// checkParts verifies the offsets against the reference parser's components.
func checkParts(t testing.TB, u *URL) {
	t.Helper()
	w, err := parser.Parse(u.s)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme() != w.Scheme() || u.Hostname() != w.Hostname() || u.Port() != w.Port() ||
		u.Path() != w.Pathname() && !(strings.HasPrefix(u.Path(), "/.") && u.Path()[2:] == w.Pathname()) ||
		u.RawQuery() != strings.TrimPrefix(w.Search(), "?") || u.Host() != w.Host() {
		t.Fatalf("%q: parts scheme=%q hostname=%q port=%q path=%q query=%q host=%q; reference %q %q %q %q %q %q",
			u.s, u.Scheme(), u.Hostname(), u.Port(), u.Path(), u.RawQuery(), u.Host(),
			w.Scheme(), w.Hostname(), w.Port(), w.Pathname(), w.Search(), w.Host())
	}
}
