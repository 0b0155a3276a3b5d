package crawl

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/simweb"
)

const dupHost = "dup.test"

// dupDistinct is the number of distinct-body pages of dupSite.
const dupDistinct = 6

// dupSite writes a static site with two byte-identical pages at different
// URLs, /a/page.html and /b/page.html, whose relative link resolves to a
// different child for each (/a/child.html, /b/child.html), and dupDistinct
// pages /dN/page.html with distinct bodies, each linking to its own
// /dN/child.html. It returns the root for simweb.StartDir.
func dupSite(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(p, body string) {
		f := filepath.Join(root, dupHost, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	index := `<html><body><a href="/a/page.html">a</a> <a href="/b/page.html">b</a>`
	const same = `<html><body><p>the same bytes at two URLs</p><a href="child.html">child</a></body></html>`
	write("a/page.html", same)
	write("b/page.html", same)
	write("a/child.html", `<html><body>child a</body></html>`)
	write("b/child.html", `<html><body>child b</body></html>`)
	for i := range dupDistinct {
		index += fmt.Sprintf(` <a href="/d%d/page.html">d%d</a>`, i, i)
		write(fmt.Sprintf("d%d/page.html", i), fmt.Sprintf(`<html><body><p>page %d</p><a href="child.html">child</a></body></html>`, i))
		write(fmt.Sprintf("d%d/child.html", i), fmt.Sprintf(`<html><body>child %d</body></html>`, i))
	}
	write("index.html", index+`</body></html>`)
	return root
}

// crawlDupSite crawls dupSite with the given content-seen size and returns
// the node's figures, the server's request count per path and the crawl
// log.
func crawlDupSite(t *testing.T, contentSeen int) (Stats, map[string]int, []LogEntry) {
	t.Helper()
	srv, err := simweb.StartDir(dupSite(t), simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	lf, err := NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{dupHost}, MaxRepeatedSegments: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n, err := Open(Options{
		DataDir: dir, Workers: 4,
		Fetcher:          fetcher.Options{AllowPrivate: true, DialContext: srv.DialContext, TLSConfig: srv.TLSClientConfig(), FetchTimeout: 5 * time.Second},
		Frontier:         frontier.Options{MinDelay: 0, Factor: 1, MaxDelay: 10 * time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
		ContentSeenSize:  contentSeen,
		Filter:           lf,
	})
	if err != nil {
		t.Fatal(err)
	}
	st := crawlToEnd(t, n, []string{"http://" + dupHost + "/"}, 2*time.Minute)
	reqs := map[string]int{}
	for _, r := range srv.Log()[dupHost] {
		reqs[r.Path]++
	}
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	return st, reqs, es
}

// Mercator's content-seen test: of two byte-identical pages at different
// URLs, only the first processed has its links extracted, so exactly one
// of their (different) children is fetched; the counter and the crawl log
// say so. Pages with distinct bodies all have their links followed.
func TestContentSeenSkipsDuplicateBody(t *testing.T) {
	st, reqs, es := crawlDupSite(t, 0) // default size
	for i := range dupDistinct {
		if p := fmt.Sprintf("/d%d/child.html", i); reqs[p] != 1 {
			t.Errorf("%s requested %d times, want 1", p, reqs[p])
		}
	}
	for _, p := range []string{"/", "/a/page.html", "/b/page.html"} {
		if reqs[p] != 1 {
			t.Errorf("%s requested %d times, want 1", p, reqs[p])
		}
	}
	if c := reqs["/a/child.html"] + reqs["/b/child.html"]; c != 1 {
		t.Errorf("children of the identical pages requested %d times (a %d, b %d), want 1: the duplicate's links were extracted",
			c, reqs["/a/child.html"], reqs["/b/child.html"])
	}
	if st.ContentDuplicates != 1 {
		t.Errorf("ContentDuplicates = %d, want 1", st.ContentDuplicates)
	}
	if want := 1 + 2 + 2*dupDistinct; st.ContentSeen != want {
		t.Errorf("content-seen set holds %d fingerprints, want %d (the distinct HTML bodies)", st.ContentSeen, want)
	}
	var noted []LogEntry
	for _, e := range es {
		if e.Note == NoteContentSeen {
			noted = append(noted, e)
		}
	}
	if len(noted) != 1 {
		t.Fatalf("%d crawl log lines noted %q, want 1", len(noted), NoteContentSeen)
	}
	if e := noted[0]; e.Links != 0 || e.Outcome != OutcomeOK || (e.URL != "http://"+dupHost+"/a/page.html" && e.URL != "http://"+dupHost+"/b/page.html") {
		t.Errorf("content-seen line %+v: want one of the identical pages, ok, 0 links", e)
	}
}

// With the test disabled both duplicates' links are followed; with a set of
// one fingerprint the crawl forgets bodies (it may follow a duplicate's
// links again) but never skips a distinct body: every child is fetched
// from a page whose body was new.
func TestContentSeenBoundedNeverLosesURLs(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		both bool // both children of the identical pages must be fetched
	}{
		{"disabled", -1, true},
		{"one entry", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, reqs, _ := crawlDupSite(t, tc.size)
			for i := range dupDistinct {
				if p := fmt.Sprintf("/d%d/child.html", i); reqs[p] != 1 {
					t.Errorf("%s requested %d times, want 1 (a distinct body's link lost)", p, reqs[p])
				}
			}
			a, b := reqs["/a/child.html"], reqs["/b/child.html"]
			if a > 1 || b > 1 || a+b == 0 || (tc.both && a+b != 2) {
				t.Errorf("children of the identical pages requested a %d, b %d times", a, b)
			}
			if a+b+int(st.ContentDuplicates) != 2 {
				t.Errorf("%d children fetched and %d duplicates counted, want 2 in all", a+b, st.ContentDuplicates)
			}
			if st.ContentSeen > max(tc.size, 0) {
				t.Errorf("content-seen set holds %d fingerprints, more than its size %d", st.ContentSeen, tc.size)
			}
		})
	}
}
