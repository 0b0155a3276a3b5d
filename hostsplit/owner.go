package hostsplit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/net/publicsuffix"
)

// NodeID names a cluster member. It is also the DNS name in the member's
// certificate (see internal/tlsutil), so it should be a valid DNS label such
// as "node-0".
type NodeID string

// Member is one node of the cluster.
type Member struct {
	ID   NodeID
	Addr string // host:port of its gRPC server
}

// Ring maps hosts to their owners by rendezvous (highest random weight)
// hashing: the owner of a host is the member whose xxhash64 of
// (member id, 0x00, key) is largest, where key is the host or, with
// ByDomain, its registered domain. Adding or removing a member moves only
// the keys it gains or had, about 1/N of them. A Ring is immutable and safe
// for concurrent use.
type Ring struct {
	ids      []NodeID
	prefixes [][]byte // id + 0x00, hashed with the key
	byDomain bool
}

// NewRing returns the ring over ids. With byDomain, hosts are keyed by their
// registered domain (eTLD+1 per golang.org/x/net/publicsuffix), so one node
// owns every host of a domain and can be polite per domain.
func NewRing(ids []NodeID, byDomain bool) (*Ring, error) {
	if len(ids) == 0 {
		return nil, errors.New("hostsplit: empty membership")
	}
	seen := make(map[NodeID]bool, len(ids))
	r := &Ring{byDomain: byDomain}
	for _, id := range ids {
		if id == "" || strings.ContainsRune(string(id), 0) {
			return nil, fmt.Errorf("hostsplit: bad node id %q", id)
		}
		if seen[id] {
			return nil, fmt.Errorf("hostsplit: duplicate node id %q", id)
		}
		seen[id] = true
		r.ids = append(r.ids, id)
		r.prefixes = append(r.prefixes, append([]byte(id), 0))
	}
	return r, nil
}

// Members returns the ids of the ring, in the order given to NewRing.
func (r *Ring) Members() []NodeID { return append([]NodeID(nil), r.ids...) }

// Owner returns the member that owns host. host should be lower-case, as
// in a normalised URL. Ownership is by host name: a port ("h:8080",
// "[::1]:8080") is ignored, so that callers holding a URL's host with its
// port (urlnorm's Host, the politeness key) and the splitter, which routes
// by Host (no port), agree on the owner.
func (r *Ring) Owner(host string) NodeID {
	key := hostName(host)
	if r.byDomain {
		if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
			key = d
		}
	}
	var stack [128]byte
	best, bestScore := 0, uint64(0)
	for i, p := range r.prefixes {
		buf := append(append(stack[:0], p...), key...)
		if s := xxhash.Sum64(buf); i == 0 || s > bestScore {
			best, bestScore = i, s
		}
	}
	return r.ids[best]
}

// hostName is host without its port and without the brackets of an IPv6
// address; a bare IPv6 address ("::1") is returned as it is.
func hostName(host string) string {
	if strings.HasPrefix(host, "[") {
		if j := strings.IndexByte(host, ']'); j > 0 {
			return host[1:j]
		}
		return host
	}
	if i := strings.IndexByte(host, ':'); i >= 0 && strings.IndexByte(host[i+1:], ':') < 0 {
		return host[:i]
	}
	return host
}

// OwnerOfURL returns the owner of the host of a normalised absolute URL.
func (r *Ring) OwnerOfURL(u string) (NodeID, error) {
	h, ok := Host(u)
	if !ok {
		return "", fmt.Errorf("hostsplit: no host in URL %q", u)
	}
	return r.Owner(h), nil
}

// Host returns the host of a normalised absolute URL ("scheme://[userinfo@]
// host[:port]/..."), without port or brackets. It does not validate the URL.
func Host(u string) (string, bool) {
	i := strings.Index(u, "://")
	if i < 0 {
		return "", false
	}
	rest := u[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if j := strings.LastIndexByte(rest, '@'); j >= 0 {
		rest = rest[j+1:]
	}
	if strings.HasPrefix(rest, "[") {
		if j := strings.IndexByte(rest, ']'); j > 0 {
			return rest[1:j], true
		}
		return "", false
	}
	if j := strings.LastIndexByte(rest, ':'); j >= 0 {
		rest = rest[:j]
	}
	return rest, rest != ""
}
