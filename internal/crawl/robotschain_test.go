package crawl

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// Issue 25, defect 6: a robots.txt redirect chain on the host itself is
// fetched one hop per politeness slot: every request to the host, the
// chain's hops included, starts at least MinDelay after the previous one
// ended (they went out 1–8 ms apart), and the rules at the chain's end
// apply.
func TestRobotsSameHostChainPolite(t *testing.T) {
	const minDelay = 40 * time.Millisecond
	type span struct {
		path     string
		from, to time.Time
	}
	var mu sync.Mutex
	var spans []span
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var n int
		switch {
		case r.URL.Path == "/robots.txt":
			http.Redirect(w, r, "/r/3.txt", http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, "/r/"):
			fmt.Sscanf(r.URL.Path, "/r/%d.txt", &n)
			if n == 0 {
				fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			} else {
				http.Redirect(w, r, fmt.Sprintf("/r/%d.txt", n-1), http.StatusMovedPermanently)
			}
		case r.URL.Path == "/":
			fmt.Fprint(w, `<html><a href="/a">a</a><a href="/private/x">x</a></html>`)
		default:
			fmt.Fprintf(w, `<html>leaf %s</html>`, r.URL.Path)
		}
		mu.Lock()
		spans = append(spans, span{r.URL.Path, start, time.Now()})
		mu.Unlock()
	}))
	defer srv.Close()
	n, err := Open(Options{
		DataDir: t.TempDir(), Workers: 2, Sitemaps: SitemapsOff,
		Fetcher:          fetcher.Options{AllowPrivate: true, Resolve: map[string]string{"chain.test": strings.TrimPrefix(srv.URL, "http://")}},
		Frontier:         frontier.Options{MinDelay: minDelay, MaxDelay: 100 * time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	crawlToEnd(t, n, []string{"http://chain.test/"}, time.Minute)
	mu.Lock()
	defer mu.Unlock()
	var paths []string
	for i, s := range spans {
		paths = append(paths, s.path)
		if i == 0 {
			continue
		}
		if gap := s.from.Sub(spans[i-1].to); gap < minDelay-5*time.Millisecond {
			t.Errorf("%s started %v after %s ended, want ≥ %v", s.path, gap, spans[i-1].path, minDelay)
		}
	}
	want := "[/robots.txt /r/3.txt /r/2.txt /r/1.txt /r/0.txt / /a]"
	if fmt.Sprint(paths) != want {
		t.Errorf("requests %v, want %s (the chain once, its rules obeyed)", paths, want)
	}
}
