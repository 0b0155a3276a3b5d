package simweb

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	whatwg "github.com/nlnwa/whatwg-url/url"
	"github.com/temoto/robotstxt"
)

// Every pathology is present, reachable from the seeds and behaves as
// documented over HTTP.
func TestPathologiesOverHTTP(t *testing.T) {
	w := newWeb(t, SmallConfig())
	res, err := w.Oracle(w.Seeds(), Rules{})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, w, Options{})
	c := srv.Client()
	get := func(host, pq string) (*http.Response, []byte) {
		t.Helper()
		resp, err := c.Get(w.URL(host, pq))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	reached := map[string]bool{}
	for _, u := range res.Fetched {
		reached[strings.SplitN(u, "/", 4)[2]] = true
	}
	for _, h := range res.TrapHosts {
		reached[h] = true
	}
	for _, p := range Pathologies() {
		hs := w.HostsWith(p)
		if len(hs) == 0 {
			t.Errorf("%v: no host", p)
			continue
		}
		host := w.HostName(hs[0])
		if p != Robots5xx && !reached[host] {
			t.Errorf("%v: %s not reached from the seeds", p, host)
		}
		t.Run(p.String(), func(t *testing.T) { checkPathology(t, w, res, c, p, host, get) })
	}
}

// inflated downloads a gzip body and counts its inflated bytes.
func inflated(t *testing.T, w *Web, c *http.Client, host, pq string) int64 {
	resp, err := c.Get(w.URL(host, pq))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func checkPathology(t *testing.T, w *Web, res *OracleResult, c *http.Client, p Pathology, host string,
	get func(host, pq string) (*http.Response, []byte)) {
	pc := pathologyCheck{t: t, w: w, res: res, c: c, host: host, get: get}
	if !pc.checkRobots(p) {
		pc.checkPages(p)
	}
}

// pathologyCheck is what checkPathology checks one host with.
type pathologyCheck struct {
	t    *testing.T
	w    *Web
	res  *OracleResult
	c    *http.Client
	host string
	get  func(host, pq string) (*http.Response, []byte)
}

// checkRobots checks the robots.txt pathologies; false if p is not one.
func (pc pathologyCheck) checkRobots(p Pathology) bool {
	t, w, res, host, get := pc.t, pc.w, pc.res, pc.host, pc.get
	robots := func() (*http.Response, []byte) { return get(host, "/robots.txt") }
	inSet := func(pq string) bool {
		i := sort.SearchStrings(res.Fetched, w.URL(host, pq))
		return i < len(res.Fetched) && res.Fetched[i] == w.URL(host, pq)
	}
	switch p {
	case RobotsDisallow:
		_, body := robots()
		if !bytes.Contains(body, []byte("Disallow: /private/")) || inSet("/private/0.html") {
			t.Errorf("robots %q; /private/0.html fetched: %v", body, inSet("/private/0.html"))
		}
	case Robots404:
		if resp, _ := robots(); resp.StatusCode != 404 || !inSet("/") {
			t.Errorf("status %d, home fetched %v", resp.StatusCode, inSet("/"))
		}
	case Robots5xx:
		if resp, _ := robots(); resp.StatusCode < 500 {
			t.Errorf("status %d", resp.StatusCode)
		}
		for _, u := range res.Fetched {
			if strings.Contains(u, "//"+host+"/") {
				t.Fatalf("%s fetched although robots.txt is 5xx", u)
			}
		}
	case RobotsRedirect:
		for i, h := range w.HostsWith(p)[:2] {
			hops := 0
			host, pq := w.HostName(h), "/robots.txt"
			var hosts []string
			for ; hops < 10; hops++ {
				resp, _ := get(host, pq)
				if resp.StatusCode < 300 || resp.StatusCode >= 400 {
					break
				}
				host, pq = resolveHostPQ(t, w.URL(host, pq), resp.Header.Get("Location"))
				hosts = append(hosts, host)
			}
			// The first host's chain is served by the second (another
			// host: RFC 9309 says follow it), the second's by itself.
			if want := w.HostName(w.HostsWith(p)[1]); hops > 0 && hosts[0] != want {
				t.Errorf("%s: first robots.txt hop to %s, want %s", w.HostName(h), hosts[0], want)
			}
			want := []int{2, 7}[i]
			// ≤ 5 hops ⇒ /img/ disallowed; more ⇒ treated as 404 ⇒ allowed.
			img := inSet2(res, w.HostName(h), "/img/0.png")
			if hops != want || img != (want > 5) {
				t.Errorf("%s: %d hops (want %d), /img/0.png fetched %v", w.HostName(h), hops, want, img)
			}
		}
	case RobotsGarbage:
		_, body := robots()
		rd, err := robotstxt.FromBytes(body)
		if err != nil || !rd.TestAgent("/d0/", "sextant") || !inSet("/") {
			t.Errorf("garbage robots: %v", err)
		}
	case RobotsHuge:
		_, body := robots()
		if len(body) < 500<<10 {
			t.Errorf("robots.txt only %d bytes", len(body))
		}
		if inSet("/doc/0.pdf") || !inSet("/img/0.png") {
			t.Errorf("rule before 500 KiB must hold, rule after must not")
		}
	case CrawlDelay:
		_, body := robots()
		rd, _ := robotstxt.FromBytes(body)
		if d := rd.FindGroup("sextant").CrawlDelay; d <= 0 || d != w.CrawlDelay(host) || d > w.cfg.CrawlDelay {
			t.Errorf("crawl delay %v, CrawlDelay() %v", d, w.CrawlDelay(host))
		}
	default:
		return false
	}
	return true
}

// checkPages checks the pathologies of pages.
func (pc pathologyCheck) checkPages(p Pathology) {
	t, w, res, c, host, get := pc.t, pc.w, pc.res, pc.c, pc.host, pc.get
	inSet := func(pq string) bool {
		i := sort.SearchStrings(res.Fetched, w.URL(host, pq))
		return i < len(res.Fetched) && res.Fetched[i] == w.URL(host, pq)
	}
	switch p {
	case Redirects:
		seen := map[int]bool{}
		for i := 0; i < numChains; i++ {
			pq := string(w.appendPath(nil, w.special(int32(mustIndex(w, host)), i)))
			for hop := 0; hop < 10; hop++ {
				resp, _ := get(host, pq)
				if resp.StatusCode < 300 || resp.StatusCode >= 400 {
					break
				}
				seen[resp.StatusCode] = true
				pq = resolvePQ(t, w.URL(host, pq), resp.Header.Get("Location"))
			}
		}
		if len(seen) != 4 {
			t.Errorf("redirect codes seen %v, want 301 302 307 308", seen)
		}
		if !inSet("/loop/0/a") || !inSet("/loop/0/b") || inSet("/orphan/1.html") {
			t.Errorf("loop pages must be fetched, the decoy in the redirect body not")
		}
	case Errors:
		for _, code := range errorCodes {
			pq := fmt.Sprintf("/e/%d/0.html", code)
			if resp, _ := get(host, pq); resp.StatusCode != int(code) || !inSet(pq) {
				t.Errorf("%s: status %d, fetched %v", pq, resp.StatusCode, inSet(pq))
			}
		}
		if inSet("/orphan/0.html") {
			t.Errorf("links of error pages must not be followed")
		}
	case Slow:
		r, _ := w.Respond(host, "/")
		if r.Latency < w.cfg.SlowLatency {
			t.Errorf("latency %v < %v", r.Latency, w.cfg.SlowLatency)
		}
	case Stall:
		start := time.Now()
		resp, body := get(host, "/stall/0.html")
		if el := time.Since(start); el < w.cfg.StallTime || int64(len(body)) != resp.ContentLength {
			t.Errorf("stall page took %v (want ≥ %v), %d of %d bytes", el, w.cfg.StallTime, len(body), resp.ContentLength)
		}
		r, _ := w.Respond(host, "/stall/0.html")
		for _, l := range r.Links {
			if l.End > 4096 {
				t.Errorf("link %q after 4 KiB", l.Raw)
			}
		}
	case Huge:
		resp, _ := get(host, "/huge/0.html")
		if resp.ContentLength != w.cfg.HugeMax {
			t.Errorf("huge page %d bytes, want %d", resp.ContentLength, w.cfg.HugeMax)
		}
	case GzipBomb:
		resp, body := get(host, "/bomb/0.html")
		if resp.Header.Get("Content-Encoding") != "gzip" || resp.ContentLength > w.cfg.BombSize/100 {
			t.Fatalf("bomb: %v, %d bytes on the wire", resp.Header, resp.ContentLength)
		}
		_ = body
		full := inflated(t, w, c, host, "/bomb/0.html")
		if full != w.cfg.BombSize+int64(len("<!DOCTYPE html>\n<html><head><title>bomb</title></head><body>\n")) {
			t.Errorf("bomb inflates to %d, want %d", full, w.cfg.BombSize)
		}
	case WrongType:
		for k, want := range []string{"text/plain; charset=utf-8", "", "application/octet-stream", "text/html",
			"application/xhtml+xml; charset=utf-8", `TEXT/HTML; Charset="UTF-8"`} {
			resp, _ := get(host, fmt.Sprintf("/t/%d.html", k))
			if got := resp.Header.Get("Content-Type"); got != want {
				t.Errorf("/t/%d.html Content-Type %q, want %q", k, got, want)
			}
		}
		if inSet("/orphan/0.html") {
			t.Errorf("links of a text/plain page must not be followed")
		}
	case BadCharset:
		bad := 0
		for a := 1; a < 5 && a < w.Articles(mustIndex(w, host)); a++ {
			r, _ := w.Respond(host, string(w.appendPath(nil, target{host: int32(mustIndex(w, host)), kind: pkArticle, a: int64(a)})))
			if strings.Contains(r.Header.Get("Content-Type"), "charset=x-bogus") || !utf8Valid(r.Body) {
				bad++
			}
		}
		if bad < 2 {
			t.Errorf("only %d bad-charset articles", bad)
		}
	case Malformed:
		r, _ := w.Respond(host, string(w.appendPath(nil, target{host: int32(mustIndex(w, host)), kind: pkArticle, a: 1})))
		if !bytes.Contains(r.Body, []byte("<!-- <a href=\"/orphan/0.html\">")) || inSet("/orphan/0.html") ||
			inSet("/orphan/1.html") {
			t.Errorf("decoys missing or followed")
		}
	case Trap:
		resp, body := get(host, "/cal/2026-12/")
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte("2027-01")) {
			t.Errorf("calendar does not link the next month: %s", body)
		}
		r, _ := w.Respond(host, "/cal/2026-12/")
		for _, l := range r.Links {
			if !strings.HasPrefix(l.URL, w.URL(host, "/")) {
				t.Errorf("trap links off-host: %s", l.URL)
			}
		}
	}
}

func inSet2(res *OracleResult, host, pq string) bool {
	i := sort.SearchStrings(res.Fetched, res.w.URL(host, pq))
	return i < len(res.Fetched) && res.Fetched[i] == res.w.URL(host, pq)
}

func mustIndex(w *Web, host string) int {
	h, _ := w.HostIndex(host)
	return h
}

func utf8Valid(b []byte) bool { return strings.ToValidUTF8(string(b), "") == string(b) }

func resolvePQ(t *testing.T, base, loc string) string {
	u, err := whatwg.ParseRef(base, loc)
	if err != nil {
		t.Fatalf("Location %q: %v", loc, err)
	}
	return u.Pathname() + u.Search()
}

// resolveHostPQ resolves loc against base and returns its host and
// path+query.
func resolveHostPQ(t *testing.T, base, loc string) (string, string) {
	u, err := whatwg.ParseRef(base, loc)
	if err != nil {
		t.Fatalf("Location %q: %v", loc, err)
	}
	return u.Host(), u.Pathname() + u.Search()
}
