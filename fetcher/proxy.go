package fetcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpproxy"
)

// ProxyFunc returns the proxy to reach target through, or nil to connect
// directly: the signature of httpproxy.Config.ProxyFunc.
type ProxyFunc func(target *url.URL) (*url.URL, error)

// ErrProxy: Options.Proxy failed to choose a proxy for a URL (a malformed
// proxy setting). Not retryable.
var ErrProxy = errors.New("fetcher: proxy")

// ProxyURL returns a ProxyFunc sending every request through proxy.
func ProxyURL(proxy *url.URL) ProxyFunc {
	return func(*url.URL) (*url.URL, error) { return proxy, nil }
}

// ProxyFromEnvironment returns the ProxyFunc of the standard variables
// HTTPS_PROXY, HTTP_PROXY and NO_PROXY (or their lower-case forms), read
// once, now. Like curl and Go's http.ProxyFromEnvironment, it never proxies
// requests to localhost or loopback addresses; with no variable set it
// connects directly.
func ProxyFromEnvironment() ProxyFunc {
	return httpproxy.FromEnvironment().ProxyFunc()
}

// ParseProxy parses the crawler's --proxy value: "none" (direct), "env"
// (ProxyFromEnvironment) or an http:// URL used for every request. A nil
// ProxyFunc means direct. Only plain-http proxies are accepted here (the
// kind tested, with tinyproxy); https targets go through them by CONNECT.
func ParseProxy(s string) (ProxyFunc, error) {
	switch s {
	case "", "none":
		return nil, nil
	case "env":
		return ProxyFromEnvironment(), nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrProxy, s, err)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%w: %q: want none, env or an http://host:port URL", ErrProxy, s)
	}
	if u.Host == "" || u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("%w: %q: want scheme://host[:port]", ErrProxy, s)
	}
	return ProxyURL(u), nil
}

// proxyKey carries the proxy chosen for a request to the transport's Proxy
// hook and to the dialer.
type proxyKey struct{}

// proxyOf is the transport's Proxy hook: the proxy viaProxy chose.
func proxyOf(req *http.Request) (*url.URL, error) {
	p, _ := req.Context().Value(proxyKey{}).(*url.URL)
	return p, nil
}

// proxyAddr is the host:port the transport dials for proxy p (the scheme's
// default port if p has none).
func proxyAddr(p *url.URL) string {
	port := p.Port()
	if port == "" { // as net/http's canonicalAddr
		switch p.Scheme {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(p.Hostname(), port)
}

// viaProxy asks Options.Proxy for u's proxy (none for a host in
// Options.Resolve). If there is one, the guard
// judges the target, since the proxy, not our dialer, will connect to it:
// without AllowPrivate, u's host is resolved here (Resolve map, resolver,
// DNS cache) and refused if any of its addresses is private — the proxy
// may pick any of them. Caveat: the proxy resolves the name again, so a
// name whose answer changes between the two lookups (DNS rebinding) can
// still steer the proxy; only a proxy that refuses private targets itself
// closes that hole. The proxy itself is the operator's choice and may be
// on loopback: the dialer does not judge it (see dialer.DialContext).
// It returns the target address (for Response.RemoteIP) if it resolved
// one, and ctx carrying the proxy for the transport.
func (f *Fetcher) viaProxy(ctx context.Context, u *url.URL) (netip.Addr, bool, context.Context, error) {
	if _, ok := f.dialer.lookupStatic(u.Hostname()); ok {
		// Options.Resolve says where the host is (a test server, a site
		// mirrored on loopback): a proxy could not know it.
		return netip.Addr{}, false, ctx, nil
	}
	p, err := f.opts.Proxy(u)
	if err != nil {
		return netip.Addr{}, false, ctx, &classError{ErrProxy, err, false, nil}
	}
	if p == nil {
		return netip.Addr{}, false, ctx, nil
	}
	var first netip.Addr
	if !f.opts.AllowPrivate {
		host := u.Hostname()
		addrs, _, err := f.dialer.addrs(ctx, host, u.Port())
		if err != nil {
			return netip.Addr{}, true, ctx, err
		}
		for _, a := range addrs {
			if err := f.dialer.guard(a); err != nil {
				return netip.Addr{}, true, ctx, fmt.Errorf("%s (through proxy %s): %w", host, p.Redacted(), err)
			}
		}
		first = addrs[0].Unmap()
	}
	return first, true, context.WithValue(ctx, proxyKey{}, p), nil
}

// isProxyDial reports whether addr is the proxy of the request behind ctx.
func isProxyDial(ctx context.Context, addr string) bool {
	p, _ := ctx.Value(proxyKey{}).(*url.URL)
	return p != nil && strings.EqualFold(proxyAddr(p), addr)
}
