package simweb

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
)

// hostInfo is all a Web stores per host: 12 bytes.
type hostInfo struct {
	n    int32     // articles, including the home page (article 0)
	kind Pathology // at most one pathology per host
	sm   uint8     // sitemap layout (sitemaps.go); smNone unless Config.SitemapShare
	ord  uint16    // ordinal of the host among the hosts of its pathology
	tls  uint8     // scheme mode (tls.go); 0 (plain HTTP) unless Config.HTTPSShare…
}

// Web is a deterministic synthetic web. It stores only a few bytes per host;
// every response is generated on request. A Web is immutable and safe for
// concurrent use; it needs no Close.
type Web struct {
	cfg    Config
	hosts  []hostInfo
	byKind [numPathologies][]int32
	pages  int64 // articles over all non-trap hosts

	linkMu, linkSigma float64 // out-degree log-normal
	pagesMu           float64 // articles per host log-normal
	sizeMu            float64
	hostZipf          zipfDist

	bigSitemap int32 // the host whose text sitemap exceeds 50,000 URLs, or -1

	bombOnce   sync.Once
	bombMember []byte // one gzip member inflating to bombChunk bytes
}

// New builds the web described by cfg (after EnsureDefaults) or reports why
// cfg is invalid.
func New(cfg Config) (*Web, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	shares := make(map[Pathology]float64, len(cfg.Shares))
	for p, s := range cfg.Shares {
		shares[p] = s
	}
	cfg.Shares = shares
	w := &Web{cfg: cfg, hosts: make([]hostInfo, cfg.Hosts)}
	w.linkMu = math.Log(cfg.LinksMedian)
	w.linkSigma = math.Sqrt(2 * math.Log(cfg.LinksMean/cfg.LinksMedian))
	w.pagesMu = math.Log(cfg.PagesPerHost) - cfg.PagesPerHostSigma*cfg.PagesPerHostSigma/2
	w.sizeMu = math.Log(float64(cfg.PageSizeMedian))
	w.hostZipf = newZipf(cfg.Hosts, cfg.ZipfHosts)
	w.assignPathologies()
	w.assignTLS()
	w.assignSitemaps()
	for i := range w.hosts {
		r := newRng(cfg.Seed, uint64(i), 0x9a6e5)
		n := int(math.Round(r.lognormal(w.pagesMu, cfg.PagesPerHostSigma)))
		n = max(cfg.MinPagesPerHost, min(n, cfg.MaxPagesPerHost))
		if k := w.hosts[i].kind; k == Slow || k == CrawlDelay {
			n = min(n, cfg.SlowHostPages)
		}
		if w.hosts[i].tls&tlsRedirect != 0 {
			// Its URLs are reached as http:// and https:// and both count
			// toward the one per-host budget (a host name's): half the
			// articles keep it within the budget a plain host fits.
			n = min(n, max(cfg.MinPagesPerHost, cfg.MaxPagesPerHost/2))
		}
		w.hosts[i].n = int32(n)
		if w.hosts[i].kind != Trap {
			w.pages += int64(n)
		}
	}
	return w, nil
}

// assignPathologies gives ceil(share·Hosts) hosts to each pathology, walking
// hosts 1…Hosts-1 in a seeded affine permutation (no memory needed).
func (w *Web) assignPathologies() {
	if w.cfg.NoPathologies || len(w.hosts) < 2 {
		return
	}
	m := uint64(len(w.hosts) - 1)
	r := newRng(w.cfg.Seed, 0, 0x9e4a)
	a := r.next()%m | 1
	for gcd(a, m) != 1 {
		a += 2
	}
	b := r.next() % m
	k := uint64(0)
	for _, p := range Pathologies() {
		c := int(math.Ceil(w.cfg.Shares[p] * float64(len(w.hosts))))
		for j := 0; j < c && k < m; j++ {
			h := 1 + (a*k+b)%m
			w.hosts[h].kind = p
			w.hosts[h].ord = uint16(min(j, math.MaxUint16))
			w.byKind[p] = append(w.byKind[p], int32(h))
			k++
		}
	}
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Config returns the web's config with defaults filled in.
func (w *Web) Config() Config {
	c := w.cfg
	c.Shares = make(map[Pathology]float64, len(w.cfg.Shares))
	for p, s := range w.cfg.Shares {
		c.Shares[p] = s
	}
	return c
}

// Domain is the domain every host name ends with.
func (w *Web) Domain() string { return w.cfg.Domain }

// NumHosts is the number of hosts.
func (w *Web) NumHosts() int { return len(w.hosts) }

// HostName returns the name of host i: h%05d.<domain>.
func (w *Web) HostName(i int) string { return fmt.Sprintf("h%05d.%s", i, w.cfg.Domain) }

// Hosts returns every host name, in index order.
func (w *Web) Hosts() []string {
	hs := make([]string, len(w.hosts))
	for i := range hs {
		hs[i] = w.HostName(i)
	}
	return hs
}

// HostIndex returns the index of a host name (lower case, no port), or
// false if the web has no such host.
func (w *Web) HostIndex(name string) (int, bool) {
	rest, ok := strings.CutSuffix(name, w.cfg.Domain)
	if !ok || len(rest) < 7 || rest[0] != 'h' || rest[len(rest)-1] != '.' {
		return 0, false
	}
	digits := rest[1 : len(rest)-1]
	if len(digits) > 5 && digits[0] == '0' {
		return 0, false
	}
	i, err := strconv.Atoi(digits)
	if err != nil || i < 0 || i >= len(w.hosts) || (len(digits) != 5 && i < 100000) {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	return i, true
}

// Pathology returns the pathology of host i.
func (w *Web) Pathology(i int) Pathology { return w.hosts[i].kind }

// HostsWith returns the indices of the hosts that have pathology p.
func (w *Web) HostsWith(p Pathology) []int {
	var out []int
	for _, h := range w.byKind[p] {
		out = append(out, int(h))
	}
	return out
}

// Articles returns the number of articles (HTML pages /, /dN/pM.html) of
// host i; trap hosts have infinitely many pages besides.
func (w *Web) Articles(i int) int { return int(w.hosts[i].n) }

// Pages is the number of articles over all non-trap hosts. The web has more
// URLs than that (directory indexes, print views, images, PDFs, special
// pages); the oracle counts those.
func (w *Web) Pages() int64 { return w.pages }

// Seeds returns the home pages of the first (up to) three hosts (with the
// host's canonical scheme).
func (w *Web) Seeds() []string {
	var s []string
	for i := 0; i < len(w.hosts) && len(s) < 3; i++ {
		if w.hosts[i].kind == Normal || i == 0 {
			s = append(s, w.url(target{host: int32(i), kind: pkHome}))
		}
	}
	return s
}
