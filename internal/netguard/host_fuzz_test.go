package netguard

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// FuzzParseHost checks ParseHost against urlnorm, which implements the
// WHATWG host parser for the crawler's canonical URLs: wherever urlnorm
// turns a host into an IPv4 address, ParseHost must find the same address,
// and a host ParseHost reads as IPv4 must not be a name to urlnorm.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "127.0.0.1.", "0", "0x",
		"256.0.0.1", "1.2.3.4.5", "08.1", "example.com", "a.0x1", "1.2.3.0x", "0x7f.0x0.0.1", "4294967295", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// A host alone (net/url and WHATWG split URLs differently: "/0"
		// is no host to one, host "0" to the other), as the fetcher sees
		// it: net/url's.
		if s == "" || strings.ContainsAny(s, "/?#@\\[]:%") {
			return
		}
		raw := "http://" + s + "/"
		gu, err := url.Parse(raw)
		if err != nil {
			return
		}
		host := gu.Hostname()
		if strings.ContainsAny(host, "+-") {
			// urlnorm reads a sign in a number ("+1" is 0.0.0.1, "-1"
			// 255.255.255.255; WHATWG: a name). Its error is on the side
			// of refusal; reported, not urlnorm's owner here.
			return
		}
		a, ok, err := ParseHost(host)
		if ok && err != nil {
			t.Fatalf("ParseHost(%q): ok and %v", host, err)
		}
		u, uerr := urlnorm.Parse(raw)
		if uerr != nil {
			return
		}
		canon, perr := netip.ParseAddr(u.Hostname())
		if perr != nil || !canon.Is4() {
			if ok && a.Is4() {
				t.Fatalf("ParseHost(%q) = %v, but urlnorm makes it the name %q", host, a, u.Hostname())
			}
			return
		}
		if !ok || a != canon {
			t.Fatalf("ParseHost(%q) = %v, %v, %v; urlnorm says %v", host, a, ok, err, canon)
		}
	})
}
