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

// docExample returns the first line of the code block under heading in
// docs/crawl-log.md.
func docExample(t *testing.T, heading string) string {
	b, err := os.ReadFile("../../docs/crawl-log.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/crawl-log.md has no %q", heading)
	}
	_, block, ok := strings.Cut(sec, "```\n")
	if !ok {
		t.Fatalf("docs/crawl-log.md %q has no example", heading)
	}
	line, _, _ := strings.Cut(block, "\n")
	return line
}

// A URL robots.txt disallows has a crawl.log line as docs/crawl-log.md's
// "robots-disallowed lines" documents it.
func TestRobotsDisallowedLineAsDocumented(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body><a href="/private/page.html">p</a></body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer s.Close()
	tmp := t.TempDir()
	seeds := filepath.Join(tmp, "seeds")
	if err := os.WriteFile(seeds, []byte(s.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "data")
	code, out, errOut := runCLI(t, "crawl", "--seeds", seeds, "--data", dir, "--allow-private", "--min-delay", "0",
		"--workers", "2", "--progress", "0", "--sitemaps", "off")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, " "+s.URL+"/private/page.html ") {
			got = l
		}
	}
	if got == "" {
		t.Fatalf("no line for the disallowed URL:\n%s", b)
	}
	doc := strings.Fields(docExample(t, "## robots-disallowed lines"))
	g := strings.Fields(got)
	// TIME NODE STATUS BYTES DURATION_MS LINKS OUTCOME URL CONTENT-TYPE NOTE: all but TIME, NODE and URL as documented.
	for _, i := range []int{2, 3, 4, 5, 6, 8, 9} {
		if len(g) <= i || len(doc) <= i || g[i] != doc[i] {
			t.Fatalf("crawl.log line\n %s\ndiffers from the documented\n %s\nin field %d", got, strings.Join(doc, " "), i)
		}
	}
	if !strings.Contains(out, "URLs disallowed 1") {
		t.Errorf("the report does not count the disallowed URL:\n%s", out)
	}
}
