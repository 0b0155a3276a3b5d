package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkSite serves one host whose home page links to n pages without links.
func linkSite(t *testing.T, n int) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html")
			var b strings.Builder
			b.WriteString("<html><body>")
			for i := range n {
				fmt.Fprintf(&b, "<a href=\"/p%d\">p</a>", i)
			}
			b.WriteString("</body></html>")
			fmt.Fprint(w, b.String())
		case r.URL.Path == "/sitemap.xml": // the crawler probes it: an empty one
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>`)
		case strings.HasPrefix(r.URL.Path, "/p"):
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>leaf</body></html>")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// A crawl that ends with its frontier empty says what it dropped: here the
// per-host budget, with the exact count and the flag to raise.
func TestCrawlEndSaysWhatWasDropped(t *testing.T) {
	const links, budget = 1100, 40
	s := linkSite(t, links)
	tmp := t.TempDir()
	seeds := filepath.Join(tmp, "seeds")
	if err := os.WriteFile(seeds, []byte(s.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "data")
	code, out, errOut := runCLI(t, "crawl", "--seeds", seeds, "--data", dir, "--allow-private", "--min-delay", "0",
		"--workers", "4", "--progress", "0", "--max-pages-per-host", fmt.Sprint(budget))
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	fetched := fetchLines(t, dir)
	// The home page, its links and the /sitemap.xml probe are links+2
	// URLs; the budget admits `budget` of them (each one fetched), the
	// rest (1,062) are dropped.
	if fetched != budget {
		t.Fatalf("%d pages fetched, want the budget's %d:\n%s", fetched, budget, out)
	}
	want := "done (frontier empty) after "
	i := strings.Index(out, want)
	if i < 0 {
		t.Fatalf("no %q:\n%s", want, out)
	}
	line := "\n  1,062 URLs dropped by the per-host budget of 40: raise --max-pages-per-host\n"
	if !strings.Contains(out[i:], line) {
		t.Errorf("the end does not say %q:\n%s", line, out)
	}
	if !strings.Contains(out, "dropped         1,062 URLs dropped by the per-host budget of 40") {
		t.Errorf("the report lacks the dropped line:\n%s", out)
	}
}

// A crawl that dropped nothing says so.
func TestCrawlEndSaysNothingDropped(t *testing.T) {
	s := linkSite(t, 3)
	tmp := t.TempDir()
	seeds := filepath.Join(tmp, "seeds")
	if err := os.WriteFile(seeds, []byte(s.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "crawl", "--seeds", seeds, "--data", filepath.Join(tmp, "data"), "--allow-private",
		"--min-delay", "0", "--workers", "2", "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "\n  nothing dropped: ") {
		t.Errorf("no 'nothing dropped' at the end:\n%s", out)
	}
}
