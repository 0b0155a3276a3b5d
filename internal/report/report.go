// Package report is the final report of a crawl — `crawler crawl` (one
// node), `crawler node` (one member of a cluster) and `crawler demo` (a
// whole cluster in one process) — built from each node's counters, its
// splitter's counters and its live miss-ratio curves (package mrc), as text
// for people and JSON for tools: totals, rates, cache hit rates,
// cross-machine traffic reduction, wire bytes per URL, DUE bytes per URL
// and the cache-size advice.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/mrc"
)

// Kinds of report.
const (
	KindCrawl = "crawl"
	KindNode  = "node"
	KindDemo  = "demo"
)

// CacheConfig is how a node's caches are sized (for the advice).
type CacheConfig struct {
	Workers        int
	CachePerWorker int
	CacheShared    bool // one front cache of CachePerWorker × Workers per node
	PeerCache      int  // entries of each per-peer splitter cache
	// Dispatch is the frontier's dispatch (which worker, hence which
	// per-worker cache, sees a host's links); "" reads as any.
	Dispatch string
}

// FrontName is how reports and the status page name the front caches.
func (c CacheConfig) FrontName() string {
	if c.CacheShared {
		return "due-front (shared by the workers)"
	}
	return "due-front (per worker)"
}

// Curves is a live miss-ratio curve estimator (mrc.Shared is one).
type Curves interface {
	Curve(algo string) ([]mrc.Point, error)
}

// Input is one node's share of the report.
type Input struct {
	Stats crawl.Stats
	// Split is the node's splitter's counters; nil for a node without
	// peers (`crawler crawl`).
	Split *hostsplit.Stats
	// Front and Cross estimate the curves of the node's front caches and
	// of the stream bound for its peers; either may be nil (no advice).
	Front, Cross Curves
	Cache        CacheConfig
	Limits       Limits // drops.go
}

// Node is one node's figures.
type Node struct {
	ID               string  `json:"id"`
	Fetches          uint64  `json:"fetches"`
	FetchOK          uint64  `json:"fetch_ok"`
	Redirects        uint64  `json:"redirects"`
	PagesPerSecond   float64 `json:"pages_per_second"`
	Bytes            uint64  `json:"bytes"`
	Peers            int     `json:"peers"`
	LinksFound       uint64  `json:"links_found"`
	LinksLocal       uint64  `json:"links_local"`
	LinksRemote      uint64  `json:"links_remote"`
	NewURLs          uint64  `json:"new_urls"`
	FrontCacheHit    float64 `json:"front_cache_hit_rate"`
	RemoteDiscovered uint64  `json:"remote_discovered"`
	RemoteSuppressed uint64  `json:"remote_suppressed_by_cache"`
	RemoteSent       uint64  `json:"remote_sent"`
	TrafficReduction float64 `json:"cross_machine_traffic_reduction"`
	WireBytes        uint64  `json:"wire_bytes"`
	WireMessages     uint64  `json:"wire_messages"`
	RawBytes         uint64  `json:"raw_url_bytes"`
	WireBytesPerURL  float64 `json:"wire_bytes_per_cross_url"`
	Received         uint64  `json:"received_from_peers"`
	DUEEntries       uint64  `json:"due_entries_on_disk"`
	DUEBytes         int64   `json:"due_bytes_on_disk"`
	DUEBytesPerURL   float64 `json:"due_disk_bytes_per_url"`
	DUEMerges        uint64  `json:"due_merges"`
	RobotsDisallowed uint64  `json:"robots_disallowed"`
	HTTPErrors       uint64  `json:"http_errors"`
	FetchErrors      uint64  `json:"fetch_errors"`
	// FrontAdvice and PeerAdvice size the node's front caches and its
	// per-peer splitter caches from their live CLOCK miss-ratio curves
	// (SHARDS) over the whole run: current size per worker, the size at
	// the curve's knee, the size reaching a 20% miss rate, and how many
	// URLs/s each would save (DUE lookups for the front caches,
	// cross-machine URLs for the per-peer caches).
	FrontAdvice *mrc.Advice `json:"front_cache_advice,omitempty"`
	PeerAdvice  *mrc.Advice `json:"peer_cache_advice,omitempty"`
}

// Report is the final report over one or more nodes.
type Report struct {
	Kind              string             `json:"kind"` // KindCrawl, KindNode or KindDemo
	Nodes             int                `json:"nodes"`
	Elapsed           float64            `json:"elapsed_seconds"`
	Fetches           uint64             `json:"fetches"`
	FetchOK           uint64             `json:"fetch_ok"`
	Redirects         uint64             `json:"redirects"`
	HTTPErrors        uint64             `json:"http_errors"`
	FetchErrors       uint64             `json:"fetch_errors"`
	FetchesRequeued   uint64             `json:"fetches_requeued"` // begun but cut short by the stop (or a fatal error): not in Fetches
	FetchRetries      uint64             `json:"fetch_retries"`    // timed out or failed to connect, tried again: not in Fetches
	RobotsDisallowed  uint64             `json:"robots_disallowed"`
	RobotsFetches     uint64             `json:"robots_fetches"`
	PrivateRefused    uint64             `json:"private_address_refused"` // URLs whose host is at a refused private address
	Sitemaps          crawl.SitemapStats `json:"sitemaps"`
	Bytes             uint64             `json:"bytes"`
	PagesPerSecond    float64            `json:"pages_per_second"`
	BytesPerSecond    float64            `json:"bytes_per_second"`
	LinksFound        uint64             `json:"links_found"`
	LinksFiltered     uint64             `json:"links_filtered"`
	NewURLs           uint64             `json:"new_urls"`
	BudgetDropped     uint64             `json:"dropped_by_host_budget"`
	ContentDuplicates uint64             `json:"content_duplicates"`
	FrontierQueued    int64              `json:"frontier_queued"`
	LocalShare        float64            `json:"local_share"`
	FrontCacheHit     float64            `json:"front_cache_hit_rate"`
	FrontCacheShared  bool               `json:"front_cache_shared"` // one per node, not one per worker
	FrontCacheSize    int                `json:"front_cache_entries_per_worker"`
	PeerCacheSize     int                `json:"peer_cache_entries"`
	TrafficReduction  float64            `json:"cross_machine_traffic_reduction"`
	WireBytesPerURL   float64            `json:"wire_bytes_per_cross_url"`
	WireRatio         float64            `json:"wire_bytes_over_raw"`
	URLsPerMessage    float64            `json:"cross_urls_per_wire_message"`
	DUEEntries        uint64             `json:"due_entries_on_disk"`
	DUEBytesPerURL    float64            `json:"due_disk_bytes_per_url"`
	Dispatch          DispatchStats      `json:"dispatch"`
	PerNode           []Node             `json:"per_node"`

	// Pages whose robots <meta> or X-Robots-Tag says nofollow or noindex,
	// and links not followed because of nofollow (page-level or rel).
	PagesNoFollow uint64 `json:"pages_nofollow"`
	PagesNoIndex  uint64 `json:"pages_noindex"`
	LinksNoFollow uint64 `json:"links_not_followed_nofollow"`
	// Net: TLS, HTTP/2 and DNS: handshakes and failures by kind.
	Net NetStats `json:"net"`
	// LinksTooDeep: links dropped by the depth bound; Dropped: what the
	// crawl dropped, by cause (drops.go).
	LinksTooDeep uint64 `json:"links_too_deep"`
	Dropped      []Drop `json:"dropped"`

	// Revisit: continuous crawling's figures; nil when off (revisit.go).
	Revisit *crawl.RevisitStats `json:"revisit,omitempty"`
}

// NetStats are the fetcher's TLS, HTTP/2 and DNS counters (requests for
// robots.txt included): handshakes, resumptions, and failures by cause,
// so that a crawl's unreachable hosts have a reason in the report.
type NetStats struct {
	TLSHandshakes  int64 `json:"tls_handshakes"`
	TLSResumed     int64 `json:"tls_resumed"`
	HTTP2Responses int64 `json:"http2_responses"`

	TLSUnknownAuthority int64 `json:"tls_unknown_authority"`
	TLSHostname         int64 `json:"tls_hostname_mismatch"`
	TLSExpired          int64 `json:"tls_expired"`
	TLSBadCert          int64 `json:"tls_bad_certificate"`
	TLSHandshakeFailed  int64 `json:"tls_handshake_failed"`
	TLSNotTLS           int64 `json:"tls_not_tls"`
	TLSTimeout          int64 `json:"tls_timeout"`
	DNSNotFound         int64 `json:"dns_not_found"`
	DNSTimeout          int64 `json:"dns_timeout"`
	DNSOther            int64 `json:"dns_other"`
}

func (n *NetStats) add(f fetcher.Stats) {
	n.TLSHandshakes += f.TLSHandshakes
	n.TLSResumed += f.TLSResumed
	n.HTTP2Responses += f.HTTP2
	n.TLSUnknownAuthority += f.TLSUnknownAuthority
	n.TLSHostname += f.TLSHostname
	n.TLSExpired += f.TLSExpired
	n.TLSBadCert += f.TLSBadCert
	n.TLSHandshakeFailed += f.TLSHandshakeFailed
	n.TLSNotTLS += f.TLSNotTLS
	n.TLSTimeout += f.TLSTimeout
	n.DNSNotFound += f.DNSNotFound
	n.DNSTimeout += f.DNSTimeout
	n.DNSOther += f.DNSOther
}

// text is the report's "tls / dns" line: "" when nothing was counted.
func (n NetStats) text() string {
	var fails []string
	for _, k := range []struct {
		name string
		v    int64
	}{
		{"unknown authority", n.TLSUnknownAuthority}, {"hostname mismatch", n.TLSHostname},
		{"expired", n.TLSExpired}, {"bad certificate", n.TLSBadCert}, {"handshake failed", n.TLSHandshakeFailed},
		{"not tls", n.TLSNotTLS}, {"tls timeout", n.TLSTimeout},
		{"dns not found", n.DNSNotFound}, {"dns timeout", n.DNSTimeout}, {"dns other", n.DNSOther},
	} {
		if k.v > 0 {
			fails = append(fails, fmt.Sprintf("%s %d", k.name, k.v))
		}
	}
	if n.TLSHandshakes == 0 && n.HTTP2Responses == 0 && len(fails) == 0 {
		return ""
	}
	s := fmt.Sprintf("tls / dns       %d TLS handshakes (%d resumed), %d HTTP/2 responses", n.TLSHandshakes, n.TLSResumed, n.HTTP2Responses)
	if len(fails) > 0 {
		s += "; failures (robots.txt included): " + strings.Join(fails, ", ")
	}
	return s
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Build makes the report of kind over the nodes in, for a crawl of elapsed.
func Build(kind string, in []Input, elapsed time.Duration) *Report {
	secs := max(elapsed.Seconds(), 1e-9)
	r := &Report{Kind: kind, Nodes: len(in), Elapsed: elapsed.Seconds()}
	if len(in) > 0 {
		r.FrontCacheShared, r.FrontCacheSize, r.PeerCacheSize = in[0].Cache.CacheShared, in[0].Cache.CachePerWorker, in[0].Cache.PeerCache
	}
	var hits, misses, local, remote, disc, sent, wire, msgs, raw uint64
	var dueBytes int64
	for _, x := range in {
		st := x.Stats
		var sp hostsplit.Stats
		if x.Split != nil {
			sp = *x.Split
		}
		nr := Node{ID: st.ID, Fetches: st.Fetches, FetchOK: st.FetchOK, Redirects: st.FetchRedirect,
			PagesPerSecond: float64(st.Fetches) / secs, Bytes: st.Bytes, Peers: sp.NumPeers(),
			LinksFound: st.LinksFound, LinksLocal: st.LinksLocal, LinksRemote: st.LinksRemote, NewURLs: st.NewURLs,
			FrontCacheHit:    st.CacheHitRate(),
			RemoteDiscovered: sp.Total.Discovered, RemoteSuppressed: sp.Total.Suppressed, RemoteSent: sp.Total.SentURLs,
			TrafficReduction: sp.TrafficReduction(),
			WireBytes:        sp.Total.WireBytes, WireMessages: sp.Total.WireMessages, RawBytes: sp.Total.RawBytes, WireBytesPerURL: ratio(sp.Total.WireBytes, sp.Total.SentURLs),
			Received:   st.Received,
			DUEEntries: st.DUE.EntriesOnDisk, DUEBytes: st.DUE.BytesOnDisk, DUEMerges: st.DUE.Merges,
			RobotsDisallowed: st.RobotsDisallowed, HTTPErrors: st.FetchHTTPErr, FetchErrors: st.FetchErr}
		if st.DUE.EntriesOnDisk > 0 {
			nr.DUEBytesPerURL = float64(st.DUE.BytesOnDisk) / float64(st.DUE.EntriesOnDisk)
		}
		if x.Front != nil {
			if c, _ := x.Front.Curve(mrc.CLOCK); c != nil {
				a := mrc.MakeAdvice(c, x.Cache.CachePerWorker, x.Cache.Workers, float64(st.LinksLocal)/secs)
				withhold(&a, x.Front)
				nr.FrontAdvice = &a
			}
		}
		if x.Cross != nil && x.Split != nil && sp.NumPeers() > 0 {
			if c, _ := x.Cross.Curve(mrc.CLOCK); c != nil {
				// The peers' caches partition the stream by owner:
				// together they act as one cache of PeerCache × peers.
				a := mrc.MakeAdvice(c, x.Cache.PeerCache, sp.NumPeers(), float64(sp.Total.Discovered)/secs)
				withhold(&a, x.Cross)
				nr.PeerAdvice = &a
			}
		}
		r.PerNode = append(r.PerNode, nr)
		r.Fetches += st.Fetches
		r.FetchOK += st.FetchOK
		r.Redirects += st.FetchRedirect
		r.HTTPErrors += st.FetchHTTPErr
		r.FetchErrors += st.FetchErr
		r.FetchesRequeued += st.FetchesRequeued
		r.FetchRetries += st.FetchRetries
		r.RobotsDisallowed += st.RobotsDisallowed
		r.RobotsFetches += st.RobotsFetches
		r.PrivateRefused += st.PrivateRefused
		r.Net.add(st.Fetcher)
		r.Sitemaps.Add(st.Sitemap)
		r.addRevisit(st.Revisit)
		r.Bytes += st.Bytes
		r.LinksFound += st.LinksFound
		r.LinksFiltered += st.LinksFiltered
		r.LinksTooDeep += st.LinksTooDeep
		r.NewURLs += st.NewURLs
		r.BudgetDropped += st.BudgetDropped
		r.ContentDuplicates += st.ContentDuplicates
		r.PagesNoFollow += st.PagesNoFollow
		r.PagesNoIndex += st.PagesNoIndex
		r.LinksNoFollow += st.LinksNoFollow
		r.FrontierQueued += st.Frontier.Queued
		hits, misses = hits+st.CacheHits, misses+st.CacheMisses
		local, remote = local+st.LinksLocal, remote+st.LinksRemote
		disc, sent = disc+sp.Total.Discovered, sent+sp.Total.SentURLs
		wire, raw = wire+sp.Total.WireBytes, raw+sp.Total.RawBytes
		msgs += sp.Total.WireMessages
		r.DUEEntries, dueBytes = r.DUEEntries+st.DUE.EntriesOnDisk, dueBytes+st.DUE.BytesOnDisk
		r.Dispatch.add(x, elapsed)
	}
	r.PagesPerSecond = float64(r.Fetches) / secs
	r.BytesPerSecond = float64(r.Bytes) / secs
	r.FrontCacheHit = ratio(hits, hits+misses)
	r.LocalShare = ratio(local, local+remote)
	if disc > 0 {
		r.TrafficReduction = 1 - ratio(sent, disc)
	}
	r.WireBytesPerURL = ratio(wire, sent)
	r.WireRatio = ratio(wire, raw)
	r.URLsPerMessage = ratio(sent, msgs)
	if r.DUEEntries > 0 {
		r.DUEBytesPerURL = float64(dueBytes) / float64(r.DUEEntries)
	}
	if len(in) > 0 {
		r.Dropped = r.drops(in[0].Limits)
	}
	return r
}

// hasPeers reports whether any node has peers (the cross-machine lines
// and the per-node table apply).
func (r *Report) hasPeers() bool {
	for _, n := range r.PerNode {
		if n.Peers > 0 {
			return true
		}
	}
	return false
}

// WriteText writes the report for people: a title line, then extra lines
// (e.g. the demo's oracle check), then the figures, the cache-size advice
// and, for clusters, a table per node.
func (r *Report) WriteText(w io.Writer, title string, extra ...string) {
	fmt.Fprintf(w, "\n== %s, %.1f s\n", title, r.Elapsed)
	for _, l := range extra {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "fetches         %d: ok %d, redirect %d, http-error %d, error %d; robots.txt fetches %d, URLs disallowed %d\n",
		r.Fetches, r.FetchOK, r.Redirects, r.HTTPErrors, r.FetchErrors, r.RobotsFetches, r.RobotsDisallowed)
	if r.PrivateRefused > 0 {
		fmt.Fprintf(w, "private address %d URLs refused: their host is at a private or loopback address (AllowPrivate off)\n", r.PrivateRefused)
	}
	if l := r.Net.text(); l != "" {
		fmt.Fprintln(w, l)
	}
	if sm := r.Sitemaps; sm.Origins > 0 {
		fmt.Fprintf(w, "sitemaps        %d fetched (of them in fetches above; %d hosts probed, %d not read whole); %d URLs found, %d admitted, %d out of scope; dropped %d against the location rule, %d invalid, %d over 50,000 per file; %d index children, %d too deep\n",
			sm.Fetches, sm.Origins, sm.Failed, sm.Found, sm.Admitted, sm.Filtered, sm.OutOfPath, sm.Invalid, sm.OverLimit, sm.Children, sm.TooDeep)
		if sm.Redirects+sm.RedirectLimit+sm.TooLarge > 0 {
			fmt.Fprintf(w, "                %d sitemap redirects followed, %d not (over 5 hops); %d sitemaps cut at 50 MB uncompressed\n",
				sm.Redirects, sm.RedirectLimit, sm.TooLarge)
		}
	}
	r.writeRevisit(w)
	fmt.Fprintf(w, "requeued        %d fetches begun but cut short by the stop or a fatal error: not counted above, their URLs fetched again on resume\n", r.FetchesRequeued)
	fmt.Fprintf(w, "retried         %d fetches timed out or failed to connect and were tried again: not counted above\n", r.FetchRetries)
	fmt.Fprintf(w, "throughput      %.0f pages/s, %.2f MiB/s (%.1f MiB in all)\n",
		r.PagesPerSecond, r.BytesPerSecond/(1<<20), float64(r.Bytes)/(1<<20))
	fmt.Fprintf(w, "links           %d found, %d filtered, %.1f%% local, %.1f%% to peers; %d new URLs, %d dropped by the per-host budget, %d content duplicates\n",
		r.LinksFound, r.LinksFiltered, 100*r.LocalShare, 100*(1-r.LocalShare), r.NewURLs, r.BudgetDropped, r.ContentDuplicates)
	if r.PagesNoFollow+r.PagesNoIndex+r.LinksNoFollow > 0 {
		fmt.Fprintf(w, "robots meta     %d pages nofollow, %d noindex (robots <meta>, X-Robots-Tag); %d links not followed for nofollow (page or rel)\n",
			r.PagesNoFollow, r.PagesNoIndex, r.LinksNoFollow)
	}
	if r.FrontCacheShared {
		fmt.Fprintf(w, "front caches    %.1f%% hit rate (one shared by the workers of each node, %d entries per worker, before the DUE)\n",
			100*r.FrontCacheHit, r.FrontCacheSize)
	} else {
		fmt.Fprintf(w, "front caches    %.1f%% hit rate (per-worker, %d entries each, before the DUE)\n", 100*r.FrontCacheHit, r.FrontCacheSize)
	}
	if r.hasPeers() {
		fmt.Fprintf(w, "cross-machine   traffic reduced by %.1f%% (per-peer caches of %d entries + batch dedup); %.1f wire bytes per URL sent (%.0f%% of raw, %.0f URLs per message)\n",
			100*r.TrafficReduction, r.PeerCacheSize, r.WireBytesPerURL, 100*r.WireRatio, r.URLsPerMessage)
	} else {
		fmt.Fprintln(w, "cross-machine   none (one node)")
	}
	fmt.Fprintf(w, "DUE             %d URLs, %.2f disk bytes per URL; frontier %d queued\n", r.DUEEntries, r.DUEBytesPerURL, r.FrontierQueued)
	for i, l := range r.DropLines() {
		fmt.Fprintf(w, "%-15s %s\n", map[bool]string{true: "dropped"}[i == 0], l)
	}
	fmt.Fprintln(w, r.Dispatch.text())
	r.writeAdvice(w)
	if !r.hasPeers() {
		return
	}
	fmt.Fprintf(w, "%-8s %8s %8s %8s %8s %9s %9s %9s %8s %8s\n", "node", "fetches", "pages/s", "cache", "local", "remote", "suppr.", "sent", "recv", "DUE B/URL")
	for _, n := range r.PerNode {
		fmt.Fprintf(w, "%-8s %8d %8.0f %7.1f%% %8d %9d %9d %9d %8d %8.2f\n", n.ID, n.Fetches, n.PagesPerSecond, 100*n.FrontCacheHit,
			n.LinksLocal, n.RemoteDiscovered, n.RemoteSuppressed, n.RemoteSent, n.Received, n.DUEBytesPerURL)
	}
}

func (r *Report) workers() int {
	for _, n := range r.PerNode {
		if n.FrontAdvice != nil {
			return n.FrontAdvice.Workers
		}
	}
	return 0
}

// writeAdvice prints each node's cache-size advice from its live CLOCK
// miss-ratio curves.
func (r *Report) writeAdvice(w io.Writer) {
	per := "/worker"
	if r.FrontCacheShared {
		per = "/worker (×workers shared)"
	}
	line := func(label string, a *mrc.Advice, unit, what string) {
		if a.Withheld != "" {
			fmt.Fprintf(w, "%-15s %s now %d%s; advice %s\n", label, what, a.CurrentPerWorker, unit, a.Withheld)
			return
		}
		s := fmt.Sprintf("%-15s %s now %d%s miss %.1f%% (%.0f URLs/s); knee %d%s miss %.1f%%, %s",
			label, what, a.CurrentPerWorker, unit, 100*a.CurrentMiss, a.SentPerSec, a.KneePerWorker, unit, 100*a.KneeMiss, savesText(a.KneeSavedPerSec))
		if a.Reached20 {
			s += fmt.Sprintf("; 20%% miss at %d%s, %s", a.K20PerWorker, unit, savesText(a.K20SavedPerSec))
		} else {
			s += "; 20% miss not reached at any size"
		}
		fmt.Fprintln(w, s)
	}
	any := false
	for _, n := range r.PerNode {
		if n.FrontAdvice != nil {
			line("cache advice", n.FrontAdvice, per, n.ID+" front (DUE lookups):")
			any = true
		}
		if n.PeerAdvice != nil {
			line("", n.PeerAdvice, " per peer", n.ID+" per-peer (cross-machine):")
		}
	}
	if !any {
		fmt.Fprintln(w, "cache advice    none (the live miss-ratio estimator was off)")
		return
	}
	if !r.FrontCacheShared && r.workers() > 1 {
		// The front curve is of the node's whole front stream: one cache
		// of the workers' total size. Per-worker caches each see only
		// their worker's links and miss far more (the hit rate above).
		fmt.Fprintf(w, "%-15s front curves model one cache of the workers' total size (what --cache-shared runs); the per-worker caches missed %.1f%%\n",
			"", 100*(1-r.FrontCacheHit))
	}
}

func savesText(x float64) string {
	if x < 0 {
		return fmt.Sprintf("costs %.0f more URLs/s", -x)
	}
	return fmt.Sprintf("saves %.0f URLs/s", x)
}

// WriteJSON writes v (a *Report, or a report that embeds one) to path as
// indented JSON.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Progress prints progress lines: on a terminal (Live) each line rewrites
// the previous one in place; otherwise each is a line of its own (for logs).
// Not safe for concurrent use.
type Progress struct {
	W    io.Writer
	Live bool
	open bool // a live line is on the screen
}

// Print shows line.
func (p *Progress) Print(line string) {
	if p.Live {
		fmt.Fprintf(p.W, "\r\033[K%s", line)
		p.open = true
		return
	}
	fmt.Fprintln(p.W, line)
}

// End ends a live line, so that what follows starts on a line of its own.
func (p *Progress) End() {
	if p.open {
		fmt.Fprintln(p.W)
		p.open = false
	}
}
