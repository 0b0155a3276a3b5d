package extract

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/sextant-crawler/sextant/internal/fixture"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// sitePages returns the pages of the real static mirror (testdata/sites,
// unpacked by internal/fixture) with a URL for each (http://<dir>/<path>).
func sitePages(tb testing.TB) (pages [][]byte, urls []string) {
	root := fixture.Sites(tb)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		pages = append(pages, data)
		urls = append(urls, "http://"+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(pages) < 1000 {
		tb.Fatalf("only %d pages under %s: the mirror is incomplete", len(pages), root)
	}
	return pages, urls
}

// simpleRef: references whose resolution net/url and WHATWG agree on
// (ASCII without characters the two escape differently, no scheme-like
// first segment, no backslash).
func simpleRef(r string) bool {
	for i := 0; i < len(r); i++ {
		c := r[i]
		if !(isAlpha(c) || isDigit(c) || strings.IndexByte("-._~/?=&#:", c) >= 0) {
			return false
		}
	}
	if i := strings.IndexByte(r, ':'); i >= 0 && !strings.HasPrefix(r, "http://") && !strings.HasPrefix(r, "https://") {
		return false
	}
	return r != ""
}

// netURLCanonical resolves ref with net/url and applies the same
// canonicalisation by hand: an independent oracle for simple references.
func netURLCanonical(base, ref string) (string, bool) {
	b, err := url.Parse(base)
	if err != nil {
		return "", false
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", false
	}
	u := b.ResolveReference(r)
	u.Fragment, u.RawFragment = "", ""
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Host = strings.TrimSuffix(u.Host, map[string]string{"http": ":80", "https": ":443"}[u.Scheme])
	if u.Path == "" {
		u.Path = "/"
	}
	s := u.String()
	if u.ForceQuery || strings.HasSuffix(strings.SplitN(ref, "#", 2)[0], "?") {
		if !strings.Contains(s, "?") {
			s += "?"
		}
	}
	return s, true
}

// TestSitesMirror extracts every page of the real mirror: no errors, every
// link canonical, and every simple <a href> resolved exactly as net/url
// (plus hand canonicalisation) resolves it. By default the <a> links with
// rel=nofollow (MediaWiki marks its external links so) are not emitted:
// Result.NoFollow counts exactly those the tokenizer sees.
func TestSitesMirror(t *testing.T) {
	pages, urls := sitePages(t)
	e, _ := New(Options{KeepDuplicates: true, FollowNoFollow: true})
	obey, _ := New(Options{KeepDuplicates: true})
	var links, compared, http, nofollow int
	for i, p := range pages {
		base := mustURL(t, urls[i])
		var got []Link
		if _, err := e.Extract(bytes.NewReader(p), base, "text/html", func(l Link) { got = append(got, l) }); err != nil {
			t.Fatalf("%s: %v", urls[i], err)
		}
		links += len(got)
		res, err := obey.Extract(bytes.NewReader(p), base, "text/html", nil)
		if err != nil {
			t.Fatal(err)
		}
		nofollow += res.NoFollow
		var wantNF int
		for _, l := range got {
			if u, err := urlnorm.Parse(l.URL); err != nil || u.String() != l.URL {
				t.Errorf("%s: non-canonical %q", urls[i], l.URL)
			} else if u.IsHTTP() {
				http++
			}
		}
		// Independent check of <a href> resolution, in document order
		// (these pages have no <base>).
		var as []string
		for _, l := range got {
			if l.Tag == "a" {
				as = append(as, l.URL)
			}
		}
		z := html.NewTokenizer(bytes.NewReader(p))
		k := 0
		for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
			if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			tok := z.Token()
			if tok.Data != "a" {
				continue
			}
			nf := false
			for _, a := range tok.Attr {
				if a.Key == "rel" {
					nf = slices.Contains(strings.Fields(strings.ToLower(a.Val)), "nofollow")
					break
				}
			}
			for _, a := range tok.Attr {
				if a.Key != "href" {
					continue
				}
				ref := strings.TrimSpace(a.Val)
				if neverCrawled([]byte(ref)) {
					break
				}
				if _, err := urlnorm.Resolve(base, ref); err != nil {
					break // skipped by the extractor too
				}
				if k >= len(as) {
					t.Fatalf("%s: extractor found fewer <a> links than the tokenizer", urls[i])
				}
				if want, ok := netURLCanonical(base.String(), ref); ok && simpleRef(ref) {
					compared++
					if as[k] != want {
						t.Errorf("%s: href %q: got %q, net/url gives %q", urls[i], ref, as[k], want)
					}
				}
				k++
				if nf {
					wantNF++
				}
				break
			}
		}
		if k != len(as) {
			t.Errorf("%s: tokenizer saw %d <a href>, extractor emitted %d", urls[i], k, len(as))
		}
		if res.NoFollow != wantNF || res.Links+res.NoFollow != len(got) {
			t.Errorf("%s: %d rel=nofollow links not emitted (%d emitted), tokenizer saw %d (%d links in all)", urls[i], res.NoFollow, res.Links, wantNF, len(got))
		}
	}
	t.Logf("%d pages, %d links (%d http/https, %d rel=nofollow), %d <a href> cross-checked against net/url", len(pages), links, http, nofollow, compared)
	if nofollow == 0 {
		t.Error("no rel=nofollow link in the mirror")
	}
	if compared < 1000 {
		t.Errorf("only %d references cross-checked", compared)
	}
}
func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
