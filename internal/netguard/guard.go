// Package netguard decides whether the crawler may connect to an IP address.
//
// A crawler that follows links from the open web must not be steered into the
// operator's own network: loopback, RFC 1918 and unique-local ranges,
// link-local (which holds the 169.254.169.254 cloud metadata endpoint),
// carrier-grade NAT, multicast and unspecified addresses are refused unless
// the operator allows private addresses. The check is made on the resolved
// address at dial time, so DNS rebinding cannot bypass it.
//
// All functions are pure and safe for concurrent use.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrPrivateAddress is wrapped by every refusal.
var ErrPrivateAddress = errors.New("netguard: refusing private or reserved address")

// RefusedError is the error of Check: it names the address refused and
// matches ErrPrivateAddress with errors.Is.
type RefusedError struct {
	Addr   netip.Addr
	Reason string // the range, e.g. "loopback"
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%v: %s is %s", ErrPrivateAddress, e.Addr, e.Reason)
}

func (e *RefusedError) Unwrap() error { return ErrPrivateAddress }

// blocked lists the prefixes refused by default, with the reason shown in errors.
var blocked = []struct {
	p      netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT (RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (incl. cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (RFC 2544)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated, RFC 4291)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local (private)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// Reason returns why addr is refused by default, or "" if it is public.
// IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry, and
// NAT64 addresses (64:ff9b::/96) as their embedded IPv4 address. A zone
// is ignored: it only says which interface reaches the address.
func Reason(addr netip.Addr) string {
	if !addr.IsValid() {
		return "invalid address"
	}
	// netip.Prefix.Contains is false for every zoned address: without
	// this, [::1%lo] would pass as public.
	addr = addr.WithZone("").Unmap()
	if addr.Is6() {
		if nat64 := netip.MustParsePrefix("64:ff9b::/96"); nat64.Contains(addr) {
			b := addr.As16()
			addr = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		}
	}
	for _, b := range blocked {
		if b.p.Contains(addr) {
			return b.reason
		}
	}
	return ""
}

// Check returns nil if addr may be dialled, or an error wrapping
// ErrPrivateAddress that names the address and the range it falls in.
func Check(addr netip.Addr) error {
	if r := Reason(addr); r != "" {
		return &RefusedError{Addr: addr, Reason: r}
	}
	return nil
}

// CheckHostPort checks a "host:port" whose host is a literal IP address, as
// passed to a dialer after resolution. A host that is not an IP literal is
// refused: the guard cannot judge a name.
func CheckHostPort(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %q is not an IP address", ErrPrivateAddress, host)
	}
	return Check(addr.WithZone(""))
}
