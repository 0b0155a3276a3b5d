package crawl

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/sitemap"
)

// largeSitemaps are the files of TestLargeSitemaps, built once.
type largeSitemaps struct {
	big  []byte // > 16 MiB urlset: pages at its start and its end
	bomb []byte // gzip of a urlset that decompresses to 60 MB
}

func buildLargeSitemaps(t *testing.T) largeSitemaps {
	t.Helper()
	var big bytes.Buffer
	big.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
		"<url><loc>http://a.test/maps/early.html</loc></url>\n")
	pad := "<url><loc>http://pad.test/" + strings.Repeat("x", 440) + "</loc></url>\n"
	for big.Len() < 20<<20 {
		big.WriteString(pad) // another host: against the location rule
	}
	big.WriteString("<url><loc>http://a.test/maps/late1.html</loc></url><url><loc>http://a.test/maps/late2.html</loc></url></urlset>\n")

	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	fmt.Fprint(zw, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://a.test/maps/b1.html</loc></url>`)
	space := "<pad>" + strings.Repeat(" ", 32<<10) + "</pad>\n"
	for n := 0; n < 60<<20; n += len(space) {
		fmt.Fprint(zw, space)
	}
	fmt.Fprint(zw, "<url><loc>http://a.test/maps/bomb-late.html</loc></url></urlset>")
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return largeSitemaps{big: big.Bytes(), bomb: z.Bytes()}
}

// TestLargeSitemaps: a sitemap is read up to sitemaps.org's 50 MB
// (uncompressed) even when the body cap is smaller — a 20 MiB sitemap's
// last entries are crawled with a 1 MiB cap (before, only what the first
// MiB listed) — and a gzip sitemap (by magic, or as Content-Encoding)
// that decompresses beyond 50 MB is cut there and counted, what it
// listed before the cut kept.
func TestLargeSitemaps(t *testing.T) {
	files := buildLargeSitemaps(t)
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Host + r.URL.Path
		mu.Lock()
		hits[key]++
		mu.Unlock()
		switch key {
		case "a.test/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow:\n\nSitemap: http://a.test/maps/big.xml\n"+
				"Sitemap: http://a.test/maps/bomb.xml.gz\nSitemap: http://a.test/maps/bomb-ce.xml\n")
		case "a.test/maps/big.xml":
			w.Header().Set("Content-Type", "application/xml")
			w.Write(files.big)
		case "a.test/maps/bomb.xml.gz":
			w.Header().Set("Content-Type", "application/gzip")
			w.Write(files.bomb)
		case "a.test/maps/bomb-ce.xml":
			w.Header().Set("Content-Type", "application/xml")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(files.bomb)
		case "a.test/", "a.test/maps/early.html", "a.test/maps/late1.html", "a.test/maps/late2.html", "a.test/maps/b1.html":
			fmt.Fprintf(w, "<html>%s</html>", key)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	n, err := Open(Options{
		DataDir: dir, Workers: 4,
		Fetcher: fetcher.Options{AllowPrivate: true, Resolve: map[string]string{"a.test": strings.TrimPrefix(srv.URL, "http://")},
			BodyCap: 1 << 20, FetchTimeout: 30 * time.Second},
		Frontier:         frontier.Options{MinDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond},
		DUEFlushInterval: 10 * time.Millisecond,
		Filter:           mustFilter(t, "test"),
	})
	if err != nil {
		t.Fatal(err)
	}
	st := crawlToEnd(t, n, []string{"http://a.test/"}, 2*time.Minute)
	want := map[string]int{"a.test/robots.txt": 1, "a.test/": 1,
		"a.test/maps/big.xml": 1, "a.test/maps/bomb.xml.gz": 1, "a.test/maps/bomb-ce.xml": 1,
		"a.test/maps/early.html": 1, "a.test/maps/late1.html": 1, "a.test/maps/late2.html": 1, "a.test/maps/b1.html": 1}
	mu.Lock()
	for k, c := range hits {
		if want[k] != c {
			t.Errorf("%s requested %d times, want %d", k, c, want[k])
		}
	}
	for k, c := range want {
		if hits[k] == 0 {
			t.Errorf("%s requested 0 times, want %d", k, c)
		}
	}
	mu.Unlock()

	sm := st.Sitemap
	t.Logf("big sitemap %d bytes, bomb %d bytes gzip; sitemap stats %+v", len(files.big), len(files.bomb), sm)
	pads := int(bytes.Count(files.big, []byte("pad.test")))
	if sm.Fetches != 3 || sm.TooLarge != 2 || sm.Failed != 2 || sm.OutOfPath != uint64(pads) || sm.Admitted != 5 {
		t.Errorf("sitemap stats %+v: want 3 fetches, 2 too large (both bombs), 2 failed, %d out of path, 5 admitted (b1 twice)", sm, pads)
	}
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	tooLarge := fmt.Sprintf("too-large=%d", sitemap.ProtocolMaxBytes)
	for _, e := range es {
		if strings.Contains(e.URL, "bomb") != strings.Contains(e.Note, tooLarge) {
			t.Errorf("%s noted %q", e.URL, e.Note)
		}
	}
}
