package urlnorm

import (
	"errors"
	"testing"
)

func TestResolve(t *testing.T) {
	base := mustParse(t, "http://Example.com:80/dir/page.html?x=1#top")
	if got, want := base.String(), "http://example.com/dir/page.html?x=1"; got != want {
		t.Fatalf("base = %q, want %q", got, want)
	}
	for _, tc := range []struct{ ref, want string }{
		{"", "http://example.com/dir/page.html?x=1"},
		{"#frag", "http://example.com/dir/page.html?x=1"},
		{"?y=2", "http://example.com/dir/page.html?y=2"},
		{"other.html", "http://example.com/dir/other.html"},
		{"./other.html", "http://example.com/dir/other.html"},
		{"../up.html", "http://example.com/up.html"},
		{"../../../../up.html", "http://example.com/up.html"},
		{"sub/", "http://example.com/dir/sub/"},
		{"sub/..", "http://example.com/dir/"},
		{"sub/.", "http://example.com/dir/sub/"},
		{"sub/%2e%2E/x", "http://example.com/dir/x"},
		{"/abs?q=a b", "http://example.com/abs?q=a%20b"},
		{"/a b/c\"d", "http://example.com/a%20b/c%22d"},
		{"/a^b|c", "http://example.com/a%5Eb|c"},
		{"/q?it's", "http://example.com/q?it%27s"},
		{"//Other.ORG", "http://other.org/"},
		{"//other.org:8080/x", "http://other.org:8080/x"},
		{"https://h:443/", "https://h/"},
		{"https://h:0443/", "https://h/"},
		{"HTTPS://h:80/", "https://h:80/"},
		{"http://h:/", "http://h/"},
		{"http://h?x", "http://h/?x"},
		{" /trimmed ", "http://example.com/trimmed"},
		{"/ta\tb", "http://example.com/tab"},
		{"\\\\back\\slash", "http://back/slash"},
		{"/q?a\\b", "http://example.com/q?a\\b"},
		{"p\\q?a\\b", "http://example.com/dir/p/q?a\\b"},
		{"http:same-scheme-relative", "http://example.com/dir/same-scheme-relative"},
		{"/münchen?q=ü", "http://example.com/m%C3%BCnchen?q=%C3%BC"},
		{"日本/ページ?q=検索#見出し", "http://example.com/dir/%E6%97%A5%E6%9C%AC/%E3%83%9A%E3%83%BC%E3%82%B8?q=%E6%A4%9C%E7%B4%A2"},
		{"/bad\xff", "http://example.com/bad%EF%BF%BD"},
		{"http://münchen.DE/", "http://xn--mnchen-3ya.de/"},
		{"http://[::1]:8080/", "http://[::1]:8080/"},
		{"http://0x7f.1/", "http://127.0.0.1/"},
		{"http://user:pw@h/", "http://user:pw@h/"},
		{"mailto:a@b", "mailto:a@b"},
		{"javascript:void(0)", "javascript:void(0)"},
	} {
		u, err := Resolve(base, tc.ref)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tc.ref, err)
			continue
		}
		if u.String() != tc.want {
			t.Errorf("Resolve(%q) = %q, want %q", tc.ref, u, tc.want)
		}
		checkParts(t, u)
		b, err := AppendResolved([]byte("x"), base, tc.ref)
		if err != nil || string(b) != "x"+tc.want {
			t.Errorf("AppendResolved(%q) = %q, %v", tc.ref, b, err)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, raw := range []string{"", "relative/path", "http://", "http://h:99999/", "http://a b/", "http://[::1/"} {
		if _, err := Parse(raw); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) error = %v, want ErrInvalid", raw, err)
		}
	}
	if _, err := Resolve(nil, "/x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Resolve(nil, relative) = %v, want ErrInvalid", err)
	}
	if _, err := AppendResolved(nil, mustParse(t, "mailto:x"), "y"); !errors.Is(err, ErrInvalid) {
		t.Errorf("relative against opaque base = %v, want ErrInvalid", err)
	}
}

func TestAccessors(t *testing.T) {
	u := mustParse(t, "HTTP://User@WWW.Example.com:8080/p/a?q=1#f")
	for _, c := range [][2]string{
		{u.String(), "http://User@www.example.com:8080/p/a?q=1"},
		{u.Scheme(), "http"}, {u.Hostname(), "www.example.com"}, {u.Port(), "8080"},
		{u.Host(), "www.example.com:8080"}, {Host(u), "www.example.com:8080"},
		{u.Path(), "/p/a"}, {u.RawQuery(), "q=1"}, {u.RequestURI(), "/p/a?q=1"},
	} {
		if c[0] != c[1] {
			t.Errorf("got %q, want %q", c[0], c[1])
		}
	}
	if !u.IsHTTP() || !u.HasHost() || Host(nil) != "" {
		t.Error("IsHTTP/HasHost/Host(nil) wrong")
	}
	// The fast path reuses an already-canonical input instead of copying it.
	in := "http://example.com/a?b"
	if mustParse(t, in).String() != in {
		t.Fatal("canonical input changed")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = Parse(in) }); n > 1 {
		t.Errorf("Parse of a canonical URL: %v allocs, want <= 1 (the *URL)", n)
	}
}

// TestConcurrentResolve: a *URL is shared by goroutines resolving slow-path
// references against it (which caches its parsed form); run with -race.
func TestConcurrentResolve(t *testing.T) {
	base := mustParse(t, "http://example.com/a/b")
	done := make(chan string)
	for range 4 {
		go func() {
			var last string
			for range 50 {
				u, err := Resolve(base, "é/../ü?q=ö")
				if err != nil {
					t.Error(err)
				}
				last = u.String()
			}
			done <- last
		}()
	}
	for range 4 {
		if got := <-done; got != "http://example.com/a/%C3%BC?q=%C3%B6" {
			t.Errorf("got %q", got)
		}
	}
}
