package extract

import (
	"errors"
	"strings"
	"testing"
)

func TestFilter(t *testing.T) {
	long := "http://h.example/" + strings.Repeat("x", 2048)
	for _, tc := range []struct {
		name string
		opts FilterOptions
		url  string
		seed string
		want Reason
	}{
		{"plain", FilterOptions{}, "http://a.example/x", "", Accepted},
		{"https", FilterOptions{}, "https://a.example/x", "", Accepted},
		{"mailto", FilterOptions{}, "mailto:a@b.example", "", RejectScheme},
		{"ftp", FilterOptions{}, "ftp://a.example/", "", RejectScheme},
		{"custom schemes", FilterOptions{Schemes: []string{"HTTPS"}}, "http://a.example/", "", RejectScheme},
		{"no host", FilterOptions{Schemes: []string{"foo"}}, "foo:bar", "", RejectNoHost},
		{"length ok", FilterOptions{}, long[:2048], "", Accepted},
		{"too long", FilterOptions{}, long[:2049], "", RejectLength},
		{"length unlimited", FilterOptions{MaxURLLength: -1}, long, "", Accepted},
		{"repeats 3 ok", FilterOptions{}, "http://a.example/a/b/a/c/a/", "", Accepted},
		{"repeats 4", FilterOptions{}, "http://a.example/a/b/a/b/a/b/a/", "", RejectRepeatedSegments},
		{"empty segments ignored", FilterOptions{}, "http://a.example/////x", "", Accepted},
		{"repeats unlimited", FilterOptions{MaxRepeatedSegments: -1}, "http://a.example/a/a/a/a/a/a", "", Accepted},
		{"same host", FilterOptions{Scope: ScopeSameHost}, "http://www.a.example/", "WWW.a.example:8080", Accepted},
		{"other host", FilterOptions{Scope: ScopeSameHost}, "http://img.a.example/", "www.a.example", RejectScope},
		{"same host, no seed", FilterOptions{Scope: ScopeSameHost}, "http://img.a.example/", "", RejectScope},
		{"same domain", FilterOptions{Scope: ScopeSameDomain}, "http://img.a.example.co.uk/", "www.a.example.co.uk", Accepted},
		{"other domain under same suffix", FilterOptions{Scope: ScopeSameDomain}, "http://b.co.uk/", "a.co.uk", RejectScope},
		{"same domain, private suffix", FilterOptions{Scope: ScopeSameDomain}, "http://x.github.io/", "y.github.io", RejectScope},
		{"same domain, sim.test", FilterOptions{Scope: ScopeSameDomain}, "http://h2.sim.test/", "h1.sim.test", Accepted},
		{"same domain, IP", FilterOptions{Scope: ScopeSameDomain}, "http://10.0.0.2/", "10.0.0.1", RejectScope},
		{"same domain, same IP", FilterOptions{Scope: ScopeSameDomain}, "http://10.0.0.1/", "10.0.0.1:8080", Accepted},
		{"suffixes", FilterOptions{Scope: ScopeSuffixes, Suffixes: []string{"A.example"}}, "http://deep.sub.a.example/", "", Accepted},
		{"suffixes exact", FilterOptions{Scope: ScopeSuffixes, Suffixes: []string{"a.example"}}, "http://a.example/", "", Accepted},
		{"suffix is not substring", FilterOptions{Scope: ScopeSuffixes, Suffixes: []string{"a.example"}}, "http://ba.example/", "", RejectScope},
		{"allow beats scope", FilterOptions{Scope: ScopeSameHost, Allow: []string{"cdn.example"}}, "http://x.cdn.example/", "a.example", Accepted},
		{"deny", FilterOptions{Deny: []string{"ads.example"}}, "http://t.ads.example/", "", RejectDenied},
		{"deny beats allow", FilterOptions{Allow: []string{"ads.example"}, Deny: []string{"ads.example"}}, "http://ads.example/", "", RejectDenied},
		{"idn list entry", FilterOptions{Deny: []string{"Bücher.example"}}, "http://www.xn--bcher-kva.example/", "", RejectDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFilter(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			ok, r := f.Allow(mustURL(t, tc.url), tc.seed)
			if r != tc.want || ok != (tc.want == Accepted) {
				t.Errorf("Allow(%s) = %v, %v; want %v", tc.url, ok, r, tc.want)
			}
		})
	}
}

func TestFilterOptions(t *testing.T) {
	_, err := NewFilter(FilterOptions{MaxURLLength: -2, Scope: ScopeSuffixes, Deny: []string{"a/b"}})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"MaxURLLength", "Suffixes", `"a/b"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// the caller's slices are copied
	schemes := []string{"http"}
	f, _ := NewFilter(FilterOptions{Schemes: schemes})
	schemes[0] = "ftp"
	if ok, _ := f.Allow(mustURL(t, "http://a.example/"), ""); !ok {
		t.Error("filter shares the caller's Schemes slice")
	}
	for r := Reason(0); r <= NumReasons; r++ {
		if r.String() == "" {
			t.Errorf("empty name for %d", r)
		}
	}
}
