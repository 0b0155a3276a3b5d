package simweb

import (
	"testing"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// A redirecting host's articles are reachable under http:// and https://,
// and both spellings count toward the one per-host budget: DefaultConfig
// with 363 to 600 hosts had h00362 (399 articles, http→https) at 1,174
// URLs, over the default budget of 1,000, so `crawler simweb --hosts 363`
// and its oracle refused the web.
func TestHTTPSWebFitsDefaultBudget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Hosts = 363
	w := newWeb(t, cfg)
	if !w.Scheme(362).Redirect {
		t.Fatalf("h00362 no longer redirects http→https: the test needs another big redirecting host")
	}
	res, err := w.Oracle(w.Seeds(), Rules{})
	if err != nil {
		t.Fatalf("oracle of a %d-host HTTPS web under the default budget: %v", cfg.Hosts, err)
	}
	perHost := map[string]int{}
	for _, s := range res.Fetched {
		u, err := whatwg.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		perHost[u.Hostname()]++
	}
	if n := perHost[w.HostName(362)]; n < 300 {
		t.Errorf("%s: %d URLs; the test wants a host near the budget", w.HostName(362), n)
	}
}
