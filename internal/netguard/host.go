package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrInvalidHost: a URL host that reads as an IPv4 number but is not a
// valid address ("256.0.0.1", "08.1"). Browsers refuse such URLs; a dialer
// must not hand them to DNS.
var ErrInvalidHost = errors.New("netguard: invalid numeric host")

// ParseHost returns the address a URL host (brackets allowed) denotes if it
// is an IP literal in any notation the WHATWG URL standard, browsers and
// inet_aton accept: dotted, decimal (2130706433), octal (0177.0.0.1), hex
// (0x7f.1), short (127.1), with a trailing dot, or IPv6. ok is false for a
// host name. A host that ends in a number but is no address fails with
// ErrInvalidHost. Checking only netip.ParseAddr would send "0x7f.1" to the
// resolver, and a C resolver answers 127.0.0.1.
func ParseHost(host string) (addr netip.Addr, ok bool, err error) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		return a, true, nil
	}
	return parseIPv4(host)
}

// parseIPv4 is the WHATWG URL standard's "ends in a number" check and IPv4
// parser.
func parseIPv4(host string) (netip.Addr, bool, error) {
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if _, ok := ipv4Number(last); !ok && !allDigits(last) {
		return netip.Addr{}, false, nil // a name
	}
	bad := fmt.Errorf("%w: %q", ErrInvalidHost, host)
	if len(parts) > 4 {
		return netip.Addr{}, false, bad
	}
	var v uint64
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return netip.Addr{}, false, bad
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, false, bad
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(5-len(parts))) {
			return netip.Addr{}, false, bad
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

// ipv4Number parses one part: 0x hex (empty digits mean 0), 0-prefixed
// octal, or decimal.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// IsLocalhost reports whether host is "localhost" or a name under it: RFC
// 6761 §6.3 reserves them for the loopback interface, so they are loopback
// whatever a resolver says, and need no lookup.
func IsLocalhost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}
