package simweb

import (
	"compress/gzip"
	"context"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	whatwg "github.com/nlnwa/whatwg-url/url"
	"github.com/temoto/robotstxt"
	"golang.org/x/net/html"
	"golang.org/x/sync/errgroup"

	"github.com/sextant-crawler/sextant/sitemap"
)

// httpBFS is an independent crawler written from the Rules text: net/http
// through the server's DialContext, x/net/html's tokenizer, whatwg-url and
// temoto/robotstxt. It shares no code with the oracle.
type httpBFS struct {
	client *http.Client
	rules  Rules
	mu     sync.Mutex
	robots map[string]*robotstxt.RobotsData
	// With rules.Sitemaps: the origins whose sitemaps are discovered, and
	// which discovered URLs are sitemaps (1) or sitemaps an index listed (2).
	probed  map[string]bool
	sitemap map[string]uint8
}

// sitemapsOf returns the sitemaps the first allowed URL of u's origin
// makes discovered (Rules.Sitemaps), once per origin.
func (b *httpBFS) sitemapsOf(ctx context.Context, u *whatwg.Url) []string {
	origin := u.Scheme() + "://" + u.Host()
	rd := b.robotsFor(ctx, u)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.probed[origin] {
		return nil
	}
	b.probed[origin] = true
	var out []string
	for _, s := range rd.Sitemaps {
		if v, err := whatwg.ParseRef(origin+"/robots.txt", s); err == nil {
			out = append(out, v.Href(true))
		}
	}
	if len(out) == 0 {
		out = append(out, origin+"/sitemap.xml")
	}
	for _, s := range out {
		if b.sitemap[s] == 0 {
			b.sitemap[s] = 1
		}
	}
	return out
}

// fetchSitemap GETs a sitemap and returns its entries and whether they are
// sitemaps (2) or pages (0); the children of a second-level index are not
// returned.
func (b *httpBFS) fetchSitemap(ctx context.Context, url string, level uint8) ([]string, uint8) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, 0
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil, 0
	}
	var out []string
	res, _ := sitemap.Parse(resp.Body, url, sitemap.Options{MaxURLLength: b.rules.MaxURLLength},
		func(e sitemap.Entry) error {
			if u, err := whatwg.Parse(e.Loc); err == nil {
				out = append(out, u.Href(true))
			}
			return nil
		})
	if res.Kind == sitemap.KindIndex {
		if level == 1 {
			return out, 2
		}
		return nil, 0
	}
	return out, 0
}

func (b *httpBFS) robotsFor(ctx context.Context, u *whatwg.Url) *robotstxt.RobotsData {
	origin := u.Scheme() + "://" + u.Host()
	b.mu.Lock()
	rd, ok := b.robots[origin]
	b.mu.Unlock()
	if ok {
		return rd
	}
	rd = b.fetchRobots(ctx, origin+"/robots.txt")
	b.mu.Lock()
	b.robots[origin] = rd
	b.mu.Unlock()
	return rd
}

func (b *httpBFS) fetchRobots(ctx context.Context, url string) *robotstxt.RobotsData {
	allow, _ := robotstxt.FromStatusAndBytes(404, nil)
	deny, _ := robotstxt.FromStatusAndBytes(500, nil)
	for redirects := 0; ; redirects++ {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		resp, err := b.client.Do(req)
		if err != nil {
			return deny
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, int64(b.rules.RobotsCap)))
		resp.Body.Close()
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			if redirects == 5 {
				return allow
			}
			next, err := whatwg.ParseRef(url, resp.Header.Get("Location"))
			if err != nil {
				return allow
			}
			url = next.Href(true)
			continue
		case resp.StatusCode >= 500:
			return deny
		case resp.StatusCode >= 400:
			return allow
		}
		rd, err := robotstxt.FromStatusAndBytes(resp.StatusCode, body)
		if err != nil {
			return allow
		}
		return rd
	}
}

// fetch GETs url and returns the URLs it makes discovered.
func (b *httpBFS) fetch(ctx context.Context, url string) ([]string, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		loc := resp.Header.Get("Location")
		if loc == "" {
			return nil, nil
		}
		u, err := whatwg.ParseRef(url, loc)
		if err != nil {
			return nil, nil
		}
		return []string{u.Href(true)}, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil, nil
	}
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, nil
		}
		body = zr
	}
	data, _ := io.ReadAll(io.LimitReader(body, b.rules.BodyCap))
	if cts := resp.Header.Values("Content-Type"); len(cts) == 0 {
		if !strings.HasPrefix(http.DetectContentType(data), "text/html") {
			return nil, nil
		}
	} else if mt, _, _ := mime.ParseMediaType(cts[0]); mt != "text/html" && mt != "application/xhtml+xml" {
		return nil, nil
	}
	return extractLinks(url, data), nil
}

// extractLinks is a straightforward tokenizer-based extractor.
func extractLinks(docURL string, data []byte) []string {
	base, err := whatwg.Parse(docURL)
	if err != nil {
		return nil
	}
	haveBase := false
	var out []string
	add := func(ref string) {
		if u, err := base.Parse(ref); err == nil {
			out = append(out, u.Href(true))
		}
	}
	z := html.NewTokenizer(strings.NewReader(string(data)))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		attr := map[string]string{}
		for _, a := range tok.Attr {
			if _, dup := attr[a.Key]; !dup {
				attr[a.Key] = a.Val
			}
		}
		switch tok.Data {
		case "base":
			if v, ok := attr["href"]; ok && !haveBase {
				if u, err := base.Parse(v); err == nil {
					base, haveBase = u, true
				}
			}
		case "a", "area", "link":
			if v, ok := attr["href"]; ok {
				add(v)
			}
		case "img", "script", "iframe", "frame", "embed", "source", "audio", "video":
			if v, ok := attr["src"]; ok {
				add(v)
			}
			if v, ok := attr["srcset"]; ok && (tok.Data == "img" || tok.Data == "source") {
				for _, cand := range strings.Split(v, ",") {
					if f := strings.Fields(cand); len(f) > 0 {
						add(f[0])
					}
				}
			}
		case "form":
			if v, ok := attr["action"]; ok {
				add(v)
			}
		case "meta":
			if strings.EqualFold(attr["http-equiv"], "refresh") {
				c := attr["content"]
				if i := strings.IndexByte(c, ';'); i >= 0 {
					c = strings.TrimSpace(c[i+1:])
					if len(c) > 4 && strings.EqualFold(c[:4], "url=") {
						add(strings.Trim(c[4:], `"' `))
					}
				}
			}
		}
	}
}

// crawl runs the BFS from seeds and returns every URL fetched (trap hosts:
// up to the budget).
func (b *httpBFS) crawl(t *testing.T, seeds []string, isTrap func(host string) bool) []string {
	t.Helper()
	ctx := context.Background()
	seen := map[string]bool{}
	perHost := map[string]int{}
	var fetched []string
	var mu sync.Mutex
	b.probed, b.sitemap = map[string]bool{}, map[string]uint8{}
	level := seeds
	for len(level) > 0 {
		var next []string
		var g errgroup.Group
		g.SetLimit(16)
		for _, s := range level {
			mu.Lock()
			if seen[s] {
				mu.Unlock()
				continue
			}
			seen[s] = true
			mu.Unlock()
			u, err := whatwg.Parse(s)
			if err != nil || (u.Scheme() != "http" && u.Scheme() != "https") || len(s) > b.rules.MaxURLLength {
				continue
			}
			host := u.Hostname()
			if host != b.rules.Scope && !strings.HasSuffix(host, "."+b.rules.Scope) {
				continue
			}
			g.Go(func() error {
				if !b.robotsFor(ctx, u).TestAgent(u.Pathname()+u.Search(), b.rules.UserAgent) {
					return nil
				}
				if b.rules.Sitemaps {
					if sms := b.sitemapsOf(ctx, u); len(sms) > 0 {
						mu.Lock()
						next = append(next, sms...)
						mu.Unlock()
					}
				}
				mu.Lock()
				if isTrap(host) && perHost[host] >= b.rules.MaxPagesPerHost {
					mu.Unlock()
					return nil
				}
				perHost[host]++
				fetched = append(fetched, s)
				mu.Unlock()
				b.mu.Lock()
				level := b.sitemap[s]
				b.mu.Unlock()
				var links []string
				if level > 0 {
					var childLevel uint8
					links, childLevel = b.fetchSitemap(ctx, s, level)
					b.mu.Lock()
					for _, l := range links {
						if childLevel > 0 && b.sitemap[l] == 0 {
							b.sitemap[l] = childLevel
						}
					}
					b.mu.Unlock()
				} else {
					var err error
					if links, err = b.fetch(ctx, s); err != nil {
						return nil // a network failure: nothing discovered
					}
				}
				mu.Lock()
				next = append(next, links...)
				mu.Unlock()
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		level = next
	}
	return fetched
}
