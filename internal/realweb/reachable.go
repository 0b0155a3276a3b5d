package realweb

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/net/html"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/simweb"
)

// Flavor is the static server whose answers Reachable models: the two
// differ on a few corner cases of a directory tree.
type Flavor int

const (
	// Simweb is simweb's directory mode (simweb.StartDir): a directory
	// without its slash redirects to it with the query dropped; a file
	// named with a trailing slash is served (the path is cleaned).
	Simweb Flavor = iota
	// NginxStatic is nginx's static module as Nginx configures it
	// (absolute_redirect off): the directory redirect keeps the query; a
	// file named with a trailing slash is 404 (ENOTDIR).
	NginxStatic
)

// ReachOptions says what Reachable follows.
type ReachOptions struct {
	// Seed is the start URL, e.g. "https://wiki.contextgarden.net/"; its
	// host's directory under the root is the site.
	Seed string
	// Schemes are the schemes of the seed's host that the crawl follows
	// (the crawler's --scope host admits http and https). Default: the
	// seed's scheme only.
	Schemes []string
	// MaxDepth, if > 0, keeps only URLs at most that many hops from the
	// seed (a redirect is a hop).
	MaxDepth int
	// Flavor is the server modelled. Default Simweb.
	Flavor Flavor
}

// linkAttrs are the (element, attribute) pairs whose URL a crawler
// follows (simweb.Rules: the contract the extractor implements).
var linkAttrs = map[string][]string{
	"a": {"href"}, "area": {"href"}, "link": {"href"}, "img": {"src", "srcset"},
	"script": {"src"}, "iframe": {"src"}, "frame": {"src"}, "embed": {"src"},
	"source": {"src", "srcset"}, "audio": {"src"}, "video": {"src"}, "form": {"action"},
}

// Key is the comparison key of an http(s) URL: scheme, host, decoded path
// and raw query (fragment dropped), computed with net/url only so that it
// is independent of the crawler's own URL code.
func Key(u *url.URL) string {
	p := u.Path
	if p == "" {
		p = "/"
	}
	k := strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + p
	if u.RawQuery != "" || u.ForceQuery {
		// WHATWG percent-encodes these in the query of special URLs;
		// net/url keeps them as written.
		var q strings.Builder
		for _, c := range []byte(u.RawQuery) {
			if c >= 0x80 || strings.IndexByte("\"' <>", c) >= 0 {
				fmt.Fprintf(&q, "%%%02X", c)
			} else {
				q.WriteByte(c)
			}
		}
		k += "?" + q.String()
	}
	return k
}

// file maps a URL path to the file the server sends, or "" if it answers
// with an error.
func file(root, host, p string, fl Flavor) string {
	f := filepath.Join(root, host, filepath.FromSlash(path.Clean("/"+p)))
	st, err := os.Stat(f)
	if err != nil {
		return ""
	}
	if st.IsDir() {
		for _, ix := range []string{"index.html", "index.xhtml", "index.htm"} {
			if _, err := os.Stat(filepath.Join(f, ix)); err == nil {
				return filepath.Join(f, ix)
			}
		}
		return ""
	}
	if fl == NginxStatic && strings.HasSuffix(p, "/") {
		return "" // open("page.html/") fails with ENOTDIR: 404
	}
	return f
}

// links returns the links of an HTML file resolved against base
// (honouring the first <base href>) that a crawler obeying nofollow
// follows: none if a robots <meta> says nofollow, and no <a>, <area> or
// <form> whose rel holds nofollow (the mirror's MediaWiki marks its
// "external" links so, some of them to its own pages).
func links(file string, base *url.URL) ([]*url.URL, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	z := html.NewTokenizer(fh)
	var raws []string
	baseSet := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		if noFollow(tok) {
			if tok.Data == "meta" {
				return nil, nil
			}
			continue
		}
		if tok.Data == "base" && !baseSet {
			for _, a := range tok.Attr {
				if a.Key == "href" {
					if b, err := base.Parse(strings.TrimSpace(a.Val)); err == nil {
						base, baseSet = b, true
					}
				}
			}
		}
		for _, want := range linkAttrs[tok.Data] {
			for _, a := range tok.Attr {
				if a.Key != want {
					continue
				}
				if want == "srcset" {
					for _, c := range strings.Split(a.Val, ",") {
						if fs := strings.Fields(c); len(fs) > 0 {
							raws = append(raws, fs[0])
						}
					}
					continue
				}
				raws = append(raws, strings.TrimSpace(a.Val))
			}
		}
	}
	var out []*url.URL
	for _, r := range raws {
		u, err := base.Parse(r)
		if err != nil && strings.Contains(err.Error(), "first path segment in URL cannot contain colon") {
			// "User_talk:X.html": '_' cannot be in a scheme, so WHATWG
			// reads a relative path; net/url refuses a colon in the
			// first segment.
			u, err = base.Parse("./" + r)
		}
		if err == nil {
			out = append(out, u)
		}
	}
	return out, nil
}

// noFollow reports a robots <meta> saying nofollow (or none), or an a,
// area or form element whose rel holds nofollow.
func noFollow(tok html.Token) bool {
	attr := func(k string) string {
		for _, a := range tok.Attr {
			if a.Key == k {
				return strings.ToLower(a.Val)
			}
		}
		return ""
	}
	switch tok.Data {
	case "meta":
		if n := strings.TrimSpace(attr("name")); n == "robots" || n == fetcher.DefaultRobotsToken {
			ws := strings.FieldsFunc(attr("content"), func(r rune) bool { return r == ',' || r == ' ' })
			return slices.Contains(ws, "nofollow") || slices.Contains(ws, "none")
		}
	case "a", "area", "form":
		return slices.Contains(strings.Fields(attr("rel")), "nofollow")
	}
	return false
}

// Reachable computes, independently of the crawler (net/url and
// golang.org/x/net/html only), the Keys of the URLs a crawl from o.Seed
// fetches on a tree of static sites under root (one directory per host):
// breadth-first over the links of HTML and XHTML files, staying on the
// seed's host and o.Schemes. Only URLs of the seed's scheme have content
// (the crawl sends the host to one server port); the others are fetched
// and fail, so they are leaves.
func Reachable(root string, o ReachOptions) (map[string]bool, error) {
	home, err := url.Parse(o.Seed)
	if err != nil {
		return nil, err
	}
	host := home.Hostname()
	schemes := map[string]bool{home.Scheme: true}
	for _, s := range o.Schemes {
		schemes[s] = true
	}
	seen := map[string]bool{Key(home): true}
	queue := []*url.URL{home}
	depth := map[*url.URL]int{home: 0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if o.MaxDepth > 0 && depth[u] >= o.MaxDepth {
			continue // its links would be too deep
		}
		if u.Scheme != home.Scheme {
			continue // sent to a port that speaks the other scheme
		}
		var ls []*url.URL
		if st, err := os.Stat(filepath.Join(root, host, filepath.FromSlash(path.Clean("/"+u.Path)))); err == nil && st.IsDir() && !strings.HasSuffix(u.Path, "/") {
			// the directory redirects to the path with a slash; the
			// crawler takes the target as a link.
			t := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path + "/"}
			if o.Flavor == NginxStatic {
				t.RawQuery = u.RawQuery
			}
			ls = append(ls, t)
		} else if f := file(root, host, u.Path, o.Flavor); f != "" {
			ct := simweb.ContentTypeOf(f)
			if strings.HasPrefix(ct, "text/html") || strings.HasPrefix(ct, "application/xhtml+xml") {
				if ls, err = links(f, u); err != nil {
					return nil, err
				}
			}
		}
		for _, l := range ls {
			if !schemes[l.Scheme] || !strings.EqualFold(l.Hostname(), host) {
				continue
			}
			l.Fragment, l.RawFragment = "", ""
			if k := Key(l); !seen[k] {
				seen[k] = true
				queue = append(queue, l)
				depth[l] = depth[u] + 1
			}
		}
	}
	// The crawler reads sitemaps: on each origin it fetches from, with no
	// Sitemap: line in robots.txt, it probes /sitemap.xml (one hop from
	// the first page, within any depth limit). This reference reads no
	// sitemap, so the site must have none (every probe is a 404 or, on
	// the other scheme's port, a 400).
	if b, _ := os.ReadFile(filepath.Join(root, host, "robots.txt")); file(root, host, "/sitemap.xml", o.Flavor) != "" ||
		strings.Contains(strings.ToLower(string(b)), "sitemap") {
		return nil, fmt.Errorf("realweb: the site %s has sitemaps, which Reachable does not read", host)
	}
	origins := map[string]bool{}
	for k := range seen {
		if u, err := url.Parse(k); err == nil {
			origins[u.Scheme+"://"+u.Host] = true
		}
	}
	for o := range origins {
		u, _ := url.Parse(o + "/sitemap.xml")
		seen[Key(u)] = true
	}
	return seen, nil
}

// Compare returns the keys of want not in got (missing) and of got not
// in want (extra).
func Compare(want, got map[string]bool) (missing, extra []string) {
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	return missing, extra
}

// contentType is simweb's Content-Type for a file extension.
func contentType(ext string) string { return simweb.ContentTypeOf("x" + ext) }
