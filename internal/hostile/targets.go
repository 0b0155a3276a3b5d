package hostile

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// LoopbackName is a host name that Resolver maps to 127.0.0.1: a public
// looking name whose DNS answer points into the crawler's own machine.
const LoopbackName = "loopback.hostile.test"

// Target is a URL naming a private or loopback address of the server.
type Target struct {
	Name string // the notation, e.g. "decimal"
	URL  string // http://HOST:PORT/target
	// Reachable reports that the URL reaches this Server when private
	// addresses are allowed: a guard that lets it through is caught by
	// Hits("/target"). Other targets (RFC 1918, metadata) lead nowhere
	// on a test machine; their dial must be refused before it starts.
	Reachable bool
}

// Targets lists the server's loopback address in every notation a URL
// may carry — WHATWG/inet_aton IPv4 forms, IPv4-mapped IPv6, zones, the
// unspecified address, localhost names and a name resolving to loopback
// (through Resolver) — and a few private ranges.
func (s *Server) Targets() []Target {
	p := s.Port
	v4 := func(name, host string) Target {
		return Target{name, fmt.Sprintf("http://%s:%d/target", host, p), true}
	}
	ts := []Target{
		v4("dotted", "127.0.0.1"),
		v4("decimal", "2130706433"),
		v4("octal", "0177.0.0.1"),
		v4("octal-padded", "0177.0000.0000.0001"),
		v4("hex", "0x7f.1"),
		v4("hex-whole", "0x7f000001"),
		v4("short", "127.1"),
		v4("trailing-dot", "127.0.0.1."),
		v4("zero", "0"),
		v4("unspecified", "0.0.0.0"),
		v4("mapped", "[::ffff:127.0.0.1]"),
		v4("mapped-long", "[0:0:0:0:0:ffff:7f00:1]"),
		v4("mapped-hex", "[::ffff:7f00:1]"),
		v4("localhost", "localhost"),
		v4("localhost-upper", "LOCALHOST"),
		v4("localhost-dot", "localhost."),
		v4("sub-localhost", "www.localhost"),
		v4("resolver", LoopbackName),
		{"other-loopback", fmt.Sprintf("http://127.0.0.2:%d/target", p), false}, // the server listens on 127.0.0.1 only
		{"metadata", "http://169.254.169.254/latest/meta-data/", false},
		{"rfc1918-10", "http://10.0.0.1/target", false},
		{"rfc1918-192", "http://192.168.0.1/target", false},
		{"rfc1918-172", fmt.Sprintf("http://%d/target", 0xac100001), false}, // 172.16.0.1
		{"cgnat", "http://100.64.0.1/target", false},
		{"ipv4-compatible", "http://[::127.0.0.1]/target", false},
		{"nat64", "http://[64:ff9b::7f00:1]/target", false},
	}
	if s.Port6 != 0 {
		v6 := func(name, host string) Target {
			return Target{name, fmt.Sprintf("http://%s:%d/target", host, s.Port6), true}
		}
		ts = append(ts, v6("ipv6", "[::1]"), v6("ipv6-long", "[0:0:0:0:0:0:0:1]"), v6("ipv6-unspecified", "[::]"))
		if lo := loopbackInterface(); lo != "" {
			// RFC 6874 zone: "%25" is the escaped "%".
			ts = append(ts, v6("ipv6-zone", "[::1%25"+lo+"]"), v4("mapped-zone", "[::ffff:127.0.0.1%25"+lo+"]"))
		}
	}
	return ts
}

// loopbackInterface is the name of the loopback interface ("lo" on Linux),
// or "".
func loopbackInterface() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 && i.Flags&net.FlagUp != 0 {
			return i.Name
		}
	}
	return ""
}

// Resolver is a resolver override for a fetcher (fetcher.Options.Resolver)
// that never touches DNS: LoopbackName is 127.0.0.1, every other name is
// recorded in Unexpected and fails.
type Resolver struct {
	Unexpected chan string // names looked up other than LoopbackName; buffered
}

// NewResolver returns a Resolver recording up to 1,000 unexpected names.
func NewResolver() *Resolver { return &Resolver{Unexpected: make(chan string, 1000)} }

// Lookup implements the resolver override.
func (r *Resolver) Lookup(_ context.Context, host string) ([]netip.Addr, error) {
	if strings.EqualFold(strings.TrimSuffix(host, "."), LoopbackName) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	select {
	case r.Unexpected <- host:
	default:
	}
	return nil, &net.DNSError{Err: "hostile: no DNS in tests", Name: host, IsNotFound: true}
}
