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
)

// httpBFS is an independent crawler written from the Rules text: net/http
// through the server's DialContext, x/net/html's tokenizer, whatwg-url and
// temoto/robotstxt. It shares no code with the oracle.
type httpBFS struct {
	client *http.Client
	rules  Rules
	mu     sync.Mutex
	robots map[string]*robotstxt.RobotsData
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
				mu.Lock()
				if isTrap(host) && perHost[host] >= b.rules.MaxPagesPerHost {
					mu.Unlock()
					return nil
				}
				perHost[host]++
				fetched = append(fetched, s)
				mu.Unlock()
				links, err := b.fetch(ctx, s)
				if err != nil {
					return nil // a network failure: nothing discovered
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
