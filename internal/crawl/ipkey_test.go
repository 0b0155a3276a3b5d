package crawl

import (
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/simweb"
)

// TestPolitenessKeyIP crawls two simweb host names that resolve (through
// the Resolve override) to the same loopback address. With PolitenessKey
// "ip" the server never sees two requests at once across both names; with
// "host" (the control) it does.
func TestPolitenessKeyIP(t *testing.T) {
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	seeds := web.Seeds()[1:3]
	var names []string
	for _, s := range seeds {
		u, _ := url.Parse(s)
		names = append(names, u.Hostname())
	}
	for _, mode := range []string{PolitenessIP, PolitenessHost} {
		t.Run(mode, func(t *testing.T) {
			srv, err := simweb.Start(web, simweb.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			lf, err := NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: names, MaxRepeatedSegments: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			n, err := Open(Options{
				DataDir: t.TempDir(), Workers: 8, PolitenessKey: mode,
				Fetcher: fetcher.Options{AllowPrivate: true, Resolve: map[string]string{web.Domain(): srv.Addr()}, TLSConfig: srv.TLSClientConfig(),
					FetchTimeout: 3 * time.Second, BodyCap: 1 << 20},
				Frontier:         frontier.Options{MinDelay: 0, Factor: 1, MaxDelay: 20 * time.Millisecond, FailureBackoff: 10 * time.Millisecond, MaxFailureBackoff: 50 * time.Millisecond},
				DUEFlushInterval: 20 * time.Millisecond,
				Filter:           lf,
			})
			if err != nil {
				t.Fatal(err)
			}
			st := crawlToEnd(t, n, seeds, time.Minute)
			log := srv.Log()
			var all []simweb.Request
			for _, h := range names {
				if len(log[h]) < 10 {
					t.Fatalf("%s: only %d requests", h, len(log[h]))
				}
				all = append(all, log[h]...)
			}
			for h := range log {
				if h != names[0] && h != names[1] {
					t.Errorf("request to out-of-scope host %s", h)
				}
			}
			mc := simweb.MaxConcurrent(all)
			t.Logf("%s: %d + %d requests, at most %d at once across both names; %d lookup failures",
				mode, len(log[names[0]]), len(log[names[1]]), mc, st.LookupFailures)
			switch mode {
			case PolitenessIP:
				if mc != 1 {
					t.Errorf("per-IP politeness: %d requests at once to one address", mc)
				}
				// And one key: requests to the address strictly alternate
				// slots (each starts after the previous one ended).
				sort.Slice(all, func(i, j int) bool { return all[i].Start.Before(all[j].Start) })
				for i := 1; i < len(all); i++ {
					if all[i].Start.Before(all[i-1].End) {
						t.Fatalf("request %d started before request %d ended", i, i-1)
					}
				}
			case PolitenessHost:
				if mc < 2 {
					t.Errorf("control: per-host politeness never overlapped the two hosts (%d)", mc)
				}
			}
		})
	}
}
