package fetcher

import (
	"context"
	"errors"
	"net/netip"
	"strings"

	"github.com/sextant-crawler/sextant/internal/netguard"
)

// ErrNoDialResolution is returned by LookupIP when Options.DialContext
// replaces dialing: the fetcher then never resolves names itself.
var ErrNoDialResolution = errors.New("fetcher: names are resolved by the DialContext override")

// LookupIP returns the address a fetch of host (a host name or IP literal,
// without port) would connect to first: the Resolve override, else the
// (cached) resolver. Per-IP politeness uses it to key hosts by server. It
// shares the DNS cache with fetches, so it costs a lookup only for a name
// not resolved within DNSCacheTTL.
func (f *Fetcher) LookupIP(ctx context.Context, host string) (netip.Addr, error) {
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if a, ok, err := netguard.ParseHost(host); err != nil || ok {
		return a, err
	}
	d := f.dialer
	if t, ok := d.lookupStatic(host); ok {
		return t.addr, nil
	}
	if netguard.IsLocalhost(host) {
		return loopbackAddrs[0], nil
	}
	if f.opts.DialContext != nil {
		return netip.Addr{}, ErrNoDialResolution
	}
	addrs, err := d.dns.resolve(ctx, host)
	if err != nil {
		return netip.Addr{}, err
	}
	return addrs[0], nil
}
