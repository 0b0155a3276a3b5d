package simweb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"syscall"
	"time"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// HTTPS (Config.HTTPSShare, RedirectHTTPSShare, H2Share, HSTSShare): each
// host has a scheme mode, hostInfo.tls, drawn from a hash of (seed, host):
//
//	0                   plain HTTP only (nothing listens on :443);
//	tlsOn               HTTPS only (nothing listens on :80);
//	tlsOn|tlsRedirect   both; every plain-HTTP request is answered 301 to
//	                    the same path on https (robots.txt included);
//
// plus tlsH2 (the TLS handshake offers "h2" by ALPN) and tlsHSTS (responses
// carry Strict-Transport-Security). Only HTTPS-only hosts send HSTS: on a
// redirecting host a crawler that honours HSTS would skip some 301s and
// fetch a set that depends on crawl order, and the oracle must not.
//
// A TLS host's canonical URLs are https. Its links are written with https,
// except that a share of links to redirecting hosts use http:// (target.http)
// so that the redirect is exercised: such links are always absolute (a
// relative or scheme-relative one would resolve to https). Nothing links to
// a scheme a host does not serve: a crawler would only find it unreachable.
const (
	tlsOn       uint8 = 1 << iota // serves HTTPS; canonical scheme https
	tlsRedirect                   // also serves plain HTTP: 301 to https
	tlsH2                         // offers h2 by ALPN
	tlsHSTS                       // sends Strict-Transport-Security
)

// plainLinkShare is the share of links to a redirecting host spelled http://.
const plainLinkShare = 0.2

// hstsValue is the Strict-Transport-Security header of HSTS hosts.
const hstsValue = "max-age=31536000; includeSubDomains"

// assignTLS draws every host's scheme mode (nothing when every share is 0,
// so that a web without HTTPS is what it was before HTTPS existed).
func (w *Web) assignTLS() {
	c := &w.cfg
	if c.HTTPSShare == 0 && c.RedirectHTTPSShare == 0 {
		return
	}
	u := func(h int, salt uint64) float64 {
		return float64(hash3(c.Seed, uint64(h), salt)>>11) / (1 << 53)
	}
	for h := range w.hosts {
		var m uint8
		switch x := u(h, 0x7150); {
		case x < c.HTTPSShare:
			m = tlsOn
			if u(h, 0x7152) < c.HSTSShare {
				m |= tlsHSTS
			}
		case x < c.HTTPSShare+c.RedirectHTTPSShare:
			m = tlsOn | tlsRedirect
		}
		if m != 0 && u(h, 0x7151) < c.H2Share {
			m |= tlsH2
		}
		w.hosts[h].tls = m
	}
}

// HostScheme is how host i is served.
type HostScheme struct {
	HTTPS    bool // serves HTTPS; its canonical URLs are https
	Plain    bool // serves plain HTTP (a TLS host that does redirects to https)
	Redirect bool // plain HTTP is answered 301 to https
	H2       bool // offers HTTP/2 by ALPN
	HSTS     bool // sends Strict-Transport-Security
}

// Scheme returns how host i is served.
func (w *Web) Scheme(i int) HostScheme {
	m := w.hosts[i].tls
	return HostScheme{HTTPS: m&tlsOn != 0, Plain: m&tlsOn == 0 || m&tlsRedirect != 0,
		Redirect: m&tlsRedirect != 0, H2: m&tlsH2 != 0, HSTS: m&tlsHSTS != 0}
}

// serves reports whether host h answers on scheme https (true) or http.
func (w *Web) serves(h int32, https bool) bool {
	m := w.hosts[h].tls
	if https {
		return m&tlsOn != 0
	}
	return m&tlsOn == 0 || m&tlsRedirect != 0
}

// canonScheme is the scheme of t's URL: https on TLS hosts unless the link
// was spelled http:// to a redirecting host.
func (w *Web) canonScheme(t target) string {
	if w.hosts[t.host].tls&tlsOn != 0 && !t.http {
		return "https://"
	}
	return "http://"
}

// spell decides whether a link to t is spelled http:// (only links to
// redirecting hosts, and only there does it draw from the generator).
func (g *gen) spell(t target) target {
	if t.kind != pkExternal && g.w.hosts[t.host].tls&tlsRedirect != 0 && g.r.chance(plainLinkShare) {
		t.http = true
	}
	return t
}

// certs is the in-memory CA and leaf certificate a Server makes at Start.
type certs struct {
	caPEM []byte
	pool  *x509.CertPool
	leaf  tls.Certificate
}

// makeCerts makes a short-lived ECDSA P-256 CA and a leaf for names (a
// pattern like "*.sim.test" is a wildcard for one label) and 127.0.0.1/::1.
func makeCerts(names []string) (*certs, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
		return n
	}
	ca := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "simweb test CA " + now.UTC().Format(time.RFC3339)},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true,
		MaxPathLenZero: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: names, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	c := &certs{pool: x509.NewCertPool(),
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	c.pool.AddCert(caCert)
	c.leaf = tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key}
	return c, nil
}

// certNames are the names the leaf certificate covers. A directory of
// sites is served plain (DialContext refuses its :443), and its directory
// names need not be valid DNS names, which a certificate refuses.
func (s *Server) certNames() []string {
	if s.dir != nil {
		return []string{"localhost"}
	}
	d := s.web.cfg.Domain
	return []string{"*." + d, d}
}

// serverTLS is the TLS listener's config: the leaf for every name, and
// "h2" offered by ALPN only to the hosts that have it (chosen by SNI).
func (s *Server) serverTLS() *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{s.certs.leaf},
		NextProtos: []string{"http/1.1"}}
	h2 := base.Clone()
	h2.NextProtos = []string{"h2", "http/1.1"}
	base.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if s.offersH2(hello.ServerName) {
			return h2, nil
		}
		return nil, nil
	}
	return base
}

func (s *Server) offersH2(name string) bool {
	if s.web == nil {
		return true // real sites: nginx offers h2 whenever it is configured
	}
	h, ok := s.web.HostIndex(strings.TrimSuffix(strings.ToLower(name), "."))
	return ok && s.web.hosts[h].tls&tlsH2 != 0
}

// CAPEM is the PEM of the CA that signed the server's certificate (made at
// Start, valid a week): what a crawler trusts with --ca-file.
func (s *Server) CAPEM() []byte { return append([]byte(nil), s.certs.caPEM...) }

// CertPool is a pool holding only the server's CA.
func (s *Server) CertPool() *x509.CertPool { return s.certs.pool.Clone() }

// TLSClientConfig is a client config that trusts the server's CA (and
// nothing else); for in-process crawlers and tests.
func (s *Server) TLSClientConfig() *tls.Config {
	return &tls.Config{RootCAs: s.CertPool(), MinVersion: tls.VersionTLS12}
}

// errRefused is what dialling a port a host does not listen on returns: it
// wraps ECONNREFUSED, as a real refused connection does.
func errRefused(network, addr string) error {
	return &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("simweb: nothing listens on %s: %w", addr, syscall.ECONNREFUSED)}
}

// buildScheme fills g with the response of host h to pq asked over https
// or plain http; false if h does not serve that scheme (nothing listens).
func (w *Web) buildScheme(g *gen, h int32, pq string, https bool) bool {
	if !w.serves(h, https) {
		return false
	}
	if !https && w.hosts[h].tls&tlsRedirect != 0 {
		w.upgrade(g, h, pq)
		return true
	}
	w.build(g, h, pq)
	return true
}

// upgrade answers a plain-HTTP request to a redirecting host as servers
// configured for HTTPS do: 301 to the same request-target on https, with
// a body that carries no link.
func (w *Web) upgrade(g *gen, h int32, pq string) {
	g.self, g.hi = target{host: h, kind: pkNone, http: true}, w.hosts[h]
	g.setBase(g.self)
	g.r = newRng(w.cfg.Seed, uint64(h), hashString(pq)^0x301)
	g.latency = w.latency(&g.r, g.hi)
	g.status = 301
	g.ctype = "text/html"
	loc := w.appendHost([]byte("https://"), h)
	if !strings.HasPrefix(pq, "/") {
		loc = append(loc, '/')
	}
	g.location = string(append(loc, pq...))
	if g.collect {
		canon := g.location
		if u, err := whatwg.Parse(canon); err == nil {
			canon = u.Href(true)
		}
		g.links = append(g.links, Link{Tag: "location", Raw: g.location, URL: canon})
	}
	g.str("<html>\r\n<head><title>301 Moved Permanently</title></head>\r\n<body>\r\n<center><h1>301 Moved Permanently</h1></center>\r\n</body>\r\n</html>\r\n")
}

// URL is the URL of pathQuery on host (a name of the web) with the host's
// canonical scheme: https on HTTPS hosts, else http.
func (w *Web) URL(host, pathQuery string) string {
	if h, ok := w.HostIndex(host); ok && w.hosts[h].tls&tlsOn != 0 {
		return "https://" + host + pathQuery
	}
	return "http://" + host + pathQuery
}
