package crawl

import (
	"fmt"
	"testing"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// Ownership is by host name: the splitter routes a URL by its host without
// the port (hostsplit.Host), so IsLocal, which workers, sitemaps and the
// revisit loop call with u.Host() ("h:8080"), must answer for "h" too, or a
// URL of a host with a port is crawled by a node that does not own it (and
// lost or fetched twice when its host moves).
func TestIsLocalIgnoresPort(t *testing.T) {
	ring, err := hostsplit.NewRing([]hostsplit.NodeID{"n0", "n1", "n2", "n3", "n4"}, false)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range 200 {
		u, err := urlnorm.Parse(fmt.Sprintf("http://h%05d.test:8080/p", i))
		if err != nil {
			t.Fatal(err)
		}
		routed, err := ring.OwnerOfURL(u.String())
		if err != nil {
			t.Fatal(err)
		}
		if got := ring.Owner(u.Host()); got != routed {
			bad++
			if bad <= 3 {
				t.Errorf("Owner(%q) = %s, but %s is routed to %s", u.Host(), got, u, routed)
			}
		}
	}
	for _, h := range []string{"[::1]:8080", "[::1]", "::1"} {
		if ring.Owner(h) != ring.Owner("::1") {
			t.Errorf("Owner(%q) differs from Owner(\"::1\")", h)
		}
	}
	if bad > 0 {
		t.Errorf("%d of 200 hosts with a port have another owner than their name", bad)
	}
}
