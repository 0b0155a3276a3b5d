package simweb

import (
	"fmt"
	"strings"
	"testing"
)

// With NavLinks every article and the home page of a host start their body
// links with the same navigation block: home, directory indexes and the
// most popular articles.
func TestNavLinks(t *testing.T) {
	cfg := SmallConfig()
	cfg.NoPathologies = true
	cfg.NavLinks = 8
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	host := w.HostName(1)
	nav := func(path string) []string {
		r, err := w.Respond(host, path)
		if err != nil {
			t.Fatal(err)
		}
		var us []string
		for _, l := range r.Links {
			if l.Tag == "a" {
				us = append(us, l.URL)
			}
		}
		if len(us) < cfg.NavLinks {
			t.Fatalf("%s: %d links", path, len(us))
		}
		return us[:cfg.NavLinks]
	}
	want := nav("/")
	if want[0] != w.URL(host, "/") {
		t.Errorf("first nav link %q, want the home page", want[0])
	}
	seen := map[string]bool{}
	for _, u := range want {
		if seen[u] {
			t.Errorf("nav link %q twice", u)
		}
		seen[u] = true
	}
	for a := 1; a < min(6, w.Articles(1)); a++ {
		p := w.url(target{host: 1, kind: pkArticle, a: int64(a)})[len(w.URL(host, "")):]
		if got := nav(p); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s nav %v, want %v", p, got, want)
		}
	}
	cfg.NavLinks = -1
	if err := cfg.Validate(); err == nil {
		t.Error("NavLinks -1 accepted")
	}
}

// DeadLinkShare sends that share of new same-host page links to pages that
// answer 404.
func TestDeadLinkShare(t *testing.T) {
	dead := func(share float64) float64 {
		cfg := SmallConfig()
		cfg.NoPathologies = true
		cfg.DeadLinkShare = share
		w, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		host := w.HostName(1)
		var links, d int
		for a := 1; a < min(20, w.Articles(1)); a++ {
			r, err := w.Respond(host, w.url(target{host: 1, kind: pkArticle, a: int64(a)})[len(w.URL(host, "")):])
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range r.Links {
				if l.Tag != "a" || !strings.HasPrefix(l.URL, w.URL(host, "/")) {
					continue
				}
				links++
				lr, err := w.Respond(host, l.URL[len(w.URL(host, "")):])
				if err != nil {
					t.Fatal(err)
				}
				if lr.Status == 404 {
					d++
				}
			}
		}
		return float64(d) / float64(links)
	}
	if s := dead(0); s > 0.1 {
		t.Errorf("DeadLinkShare 0: %.2f of links dead", s)
	}
	if s := dead(0.8); s < 0.3 {
		t.Errorf("DeadLinkShare 0.8: only %.2f of links dead", s)
	}
}
