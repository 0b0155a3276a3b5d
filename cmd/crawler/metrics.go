package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
)

// statsCollector turns a node's plain Stats snapshots into Prometheus
// metrics at scrape time: the libraries keep plain counters, and only the
// command knows about Prometheus. Counters are monotonic since the process
// started (a restart resets them, which rate() handles).
type statsCollector struct {
	node  func() crawl.Stats
	split func() hostsplit.Stats
	done  func() bool
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("sextant_"+name, help, labels, nil)
}

var (
	mFetches       = desc("fetches_total", "Page fetch attempts by outcome (ok 2xx, redirect 3xx, http_error 1xx/4xx/5xx/other, error: network or protocol failure, not_modified: 304 to a revisit's conditional request) and status class.", "node", "outcome", "class")
	mRobotsDenied  = desc("robots_disallowed_total", "URLs not fetched because robots.txt disallows them.", "node")
	mRobotsFetches = desc("robots_fetches_total", "HTTP requests for robots.txt.", "node")
	mPrivate       = desc("private_address_refused_total", "URLs not fetched because their host is at a private or loopback address (the guard is on).", "node")
	mBytes         = desc("fetched_bytes_total", "Body bytes fetched (decoded).", "node")
	mFetchWire     = desc("fetch_wire_bytes_total", "Body bytes read from the network (compressed).", "node")
	mFetchSeconds  = desc("fetch_seconds_total", "Time spent in fetches, summed over workers.", "node")
	mFetchRetries  = desc("fetch_retries_total", "Fetches that timed out or failed to connect and were requeued for another attempt (not in sextant_fetches_total; the last failed attempt is).", "node")
	mLinks         = desc("links_total", "Links extracted, by fate (found, filtered, local, remote; nofollow: not followed for a nofollow directive, not in found).", "node", "kind")
	mNewURLs       = desc("new_urls_total", "URLs found new by the DUE and queued.", "node")
	mContentDups   = desc("content_duplicates_total", "Pages whose content was seen before.", "node")
	mRobotsPages   = desc("robots_directive_pages_total", "Pages whose robots <meta> or X-Robots-Tag holds the directive (nofollow, noindex).", "node", "directive")
	mFrontier      = desc("frontier_urls", "URLs waiting in the frontier (leases excluded).", "node")
	mInFlight      = desc("frontier_in_flight", "Fetches in flight (frontier leases).", "node")
	mHosts         = desc("frontier_hosts", "Hosts with queued URLs, by state (active, ready, waiting).", "node", "state")
	mPolite        = desc("politeness_waits_total", "Times a worker waited for a politeness delay although URLs were queued.", "node")
	mDUEEntries    = desc("due_entries", "URL fingerprints in the DUE's disk set.", "node")
	mDUEBytes      = desc("due_disk_bytes", "Bytes of the DUE's run files.", "node")
	mDUEBuffer     = desc("due_buffered_entries", "Candidates buffered in the DUE awaiting a merge.", "node")
	mDUEMerges     = desc("due_merges_total", "DUE merges.", "node")
	mDUEMergeSecs  = desc("due_merge_seconds_total", "Time spent in DUE merges.", "node")
	mCacheHits     = desc("cache_hits_total", "Cache hits by cache (front: per-worker URL cache; peer: splitter cache per peer; robots; dns).", "node", "cache", "peer")
	mCacheMisses   = desc("cache_misses_total", "Cache misses by cache, as for sextant_cache_hits_total.", "node", "cache", "peer")
	mSplitDisc     = desc("splitter_urls_discovered_total", "URLs routed to a peer (before its cache).", "node", "peer")
	mSplitSupp     = desc("splitter_urls_suppressed_total", "URLs for a peer dropped by the peer cache.", "node", "peer")
	mSplitSent     = desc("splitter_urls_sent_total", "URLs sent to a peer in batches.", "node", "peer")
	mSplitRecv     = desc("splitter_urls_received_total", "URLs received from a peer.", "node", "peer")
	mWireBytes     = desc("wire_bytes_total", "Encoded batch bytes sent to a peer (first transmission).", "node", "peer")
	mRawBytes      = desc("wire_raw_url_bytes_total", "Raw bytes of the URLs sent to a peer (for the compression ratio).", "node", "peer")
	mStreamErrs    = desc("splitter_stream_errors_total", "Failed batch streams to a peer (a peer down or cut off).", "node", "peer")
	mPeerLastErr   = desc("splitter_peer_last_error_timestamp_seconds", "When the last stream to a peer failed (Unix time; absent if none since start), by kind of failure (refused, tls, timeout, reset, ...); the cause is logged and on the status page.", "node", "peer", "kind")
	mPeerFailing   = desc("splitter_peer_failing", "1 while no batch was acknowledged by a peer since its last stream failure.", "node", "peer")
	mSpoolBatches  = desc("spool_batches", "Batches spooled for a peer, not yet acknowledged.", "node", "peer")
	mSpoolURLs     = desc("spool_urls", "URLs spooled for a peer, not yet acknowledged.", "node", "peer")
	mBuffered      = desc("splitter_buffered_urls", "URLs for a peer buffered in memory, not yet spooled.", "node", "peer")
	mSitemaps      = desc("sitemap_fetches_total", "Sitemap files fetched (also in sextant_fetches_total).", "node")
	mSitemapURLs   = desc("sitemap_urls_total", "Sitemap entries by fate (found, admitted, filtered: out of scope; dropped_location_rule, dropped_invalid, dropped_over_limit; index_child, index_too_deep).", "node", "fate")
	mDone          = desc("crawl_terminated", "1 once the whole cluster's crawl has terminated.", "node")
	mNetFailures   = desc("fetch_net_failures_total", "TLS and DNS failures by kind (robots.txt requests included): unknown_authority, hostname, expired, bad_certificate, handshake, not_tls, tls_timeout, dns_not_found, dns_timeout, dns_other.", "node", "kind")
	mTLSHandshakes = desc("tls_handshakes_total", "Completed TLS handshakes, by whether they resumed a session.", "node", "resumed")
	mHTTP2         = desc("http2_responses_total", "Responses received over HTTP/2.", "node")
	mConnsOpen     = desc("fetch_connections_open", "Connections to web servers open now (in use or idle).", "node")
	mSteals        = desc("frontier_steals_total", "Leases of a host bound to another worker (--dispatch host-affine: taken when all of the worker's own hosts were waiting).", "node")
	mNextWait      = desc("worker_wait_seconds_total", "Time workers spent waiting for the frontier to hand them a URL, summed over workers (idle time).", "node")
)

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mFetches, mRobotsDenied, mRobotsFetches, mPrivate, mBytes, mFetchWire, mFetchSeconds, mFetchRetries,
		mLinks, mNewURLs, mContentDups, mRobotsPages, mFrontier, mInFlight, mHosts, mPolite, mDUEEntries, mDUEBytes, mDUEBuffer,
		mDUEMerges, mDUEMergeSecs, mCacheHits, mCacheMisses, mSplitDisc, mSplitSupp, mSplitSent,
		mSplitRecv, mWireBytes, mRawBytes, mStreamErrs, mPeerLastErr, mPeerFailing, mSpoolBatches, mSpoolURLs, mBuffered, mSitemaps, mSitemapURLs, mDone,
		mNetFailures, mTLSHandshakes, mHTTP2, mConnsOpen, mFetchHist, mTTFBHist, mDNSHist, mTLSHist, mSteals, mNextWait} {
		ch <- d
	}
	for _, d := range revisitDescs() {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.node()
	id := st.ID
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append([]string{id}, labels...)...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{id}, labels...)...)
	}
	for _, fc := range st.FetchClasses() {
		counter(mFetches, float64(fc.N), fc.Outcome, fc.Class)
	}
	collectLatencies(ch, id, st.Fetcher)
	collectRevisit(st, counter, gauge) // metrics_revisit.go
	counter(mRobotsDenied, float64(st.RobotsDisallowed))
	counter(mRobotsFetches, float64(st.RobotsFetches))
	counter(mPrivate, float64(st.PrivateRefused))
	counter(mBytes, float64(st.Bytes))
	counter(mFetchWire, float64(st.Fetcher.WireBytes))
	counter(mFetchSeconds, st.FetchTime.Seconds())
	counter(mFetchRetries, float64(st.FetchRetries))
	counter(mLinks, float64(st.LinksFound), "found")
	counter(mLinks, float64(st.LinksFiltered), "filtered")
	counter(mLinks, float64(st.LinksLocal), "local")
	counter(mLinks, float64(st.LinksRemote), "remote")
	counter(mLinks, float64(st.LinksNoFollow), "nofollow")
	counter(mNewURLs, float64(st.NewURLs))
	counter(mSitemaps, float64(st.Sitemap.Fetches))
	for _, f := range []struct {
		fate string
		v    uint64
	}{{"found", st.Sitemap.Found}, {"admitted", st.Sitemap.Admitted}, {"filtered", st.Sitemap.Filtered},
		{"dropped_location_rule", st.Sitemap.OutOfPath}, {"dropped_invalid", st.Sitemap.Invalid},
		{"dropped_over_limit", st.Sitemap.OverLimit}, {"index_child", st.Sitemap.Children}, {"index_too_deep", st.Sitemap.TooDeep}} {
		counter(mSitemapURLs, float64(f.v), f.fate)
	}
	counter(mContentDups, float64(st.ContentDuplicates))
	counter(mRobotsPages, float64(st.PagesNoFollow), "nofollow")
	counter(mRobotsPages, float64(st.PagesNoIndex), "noindex")
	gauge(mFrontier, float64(st.Frontier.Queued))
	gauge(mInFlight, float64(st.Frontier.InFlight))
	gauge(mHosts, float64(st.Frontier.ActiveHosts), "active")
	gauge(mHosts, float64(st.Frontier.ReadyHosts), "ready")
	gauge(mHosts, float64(st.Frontier.WaitingHosts), "waiting")
	counter(mPolite, float64(st.Frontier.PolitenessWaits))
	counter(mSteals, float64(st.Frontier.Steals))
	counter(mNextWait, st.Frontier.NextWait.Seconds())
	gauge(mDUEEntries, float64(st.DUE.EntriesOnDisk))
	gauge(mDUEBytes, float64(st.DUE.BytesOnDisk))
	gauge(mDUEBuffer, float64(st.DUE.BufferEntries+st.DUE.MergingEntries))
	counter(mDUEMerges, float64(st.DUE.Merges))
	counter(mDUEMergeSecs, st.DUE.MergeTime.Seconds())
	counter(mCacheHits, float64(st.CacheHits), "front", "")
	counter(mCacheMisses, float64(st.CacheMisses), "front", "")
	counter(mCacheHits, float64(st.Fetcher.RobotsCacheHits), "robots", "")
	counter(mCacheMisses, float64(st.Fetcher.RobotsCacheMisses), "robots", "")
	counter(mCacheHits, float64(st.Fetcher.DNSHits), "dns", "")
	counter(mCacheMisses, float64(st.Fetcher.DNSMisses), "dns", "")
	fs := st.Fetcher
	for _, k := range []struct {
		kind string
		v    int64
	}{
		{"unknown_authority", fs.TLSUnknownAuthority}, {"hostname", fs.TLSHostname}, {"expired", fs.TLSExpired},
		{"bad_certificate", fs.TLSBadCert}, {"handshake", fs.TLSHandshakeFailed}, {"not_tls", fs.TLSNotTLS},
		{"tls_timeout", fs.TLSTimeout}, {"dns_not_found", fs.DNSNotFound}, {"dns_timeout", fs.DNSTimeout},
		{"dns_other", fs.DNSOther},
	} {
		counter(mNetFailures, float64(k.v), k.kind)
	}
	counter(mTLSHandshakes, float64(fs.TLSHandshakes-fs.TLSResumed), "false")
	counter(mTLSHandshakes, float64(fs.TLSResumed), "true")
	counter(mHTTP2, float64(fs.HTTP2))
	gauge(mConnsOpen, float64(fs.ConnsOpen))
	if c.split != nil {
		sp := c.split()
		for _, p := range sp.Peers {
			if p.Peer == sp.Self {
				continue
			}
			peer := string(p.Peer)
			counter(mCacheHits, float64(p.Suppressed), "peer", peer)
			counter(mCacheMisses, float64(p.Discovered-p.Suppressed), "peer", peer)
			counter(mSplitDisc, float64(p.Discovered), peer)
			counter(mSplitSupp, float64(p.Suppressed), peer)
			counter(mSplitSent, float64(p.SentURLs), peer)
			counter(mSplitRecv, float64(p.ReceivedURLs), peer)
			counter(mWireBytes, float64(p.WireBytes), peer)
			counter(mRawBytes, float64(p.RawBytes), peer)
			counter(mStreamErrs, float64(p.StreamErrors), peer)
			if !p.LastErrorAt.IsZero() {
				gauge(mPeerLastErr, float64(p.LastErrorAt.UnixNano())/1e9, peer, p.LastErrorKind)
			}
			failing := 0.0
			if p.Failing {
				failing = 1
			}
			gauge(mPeerFailing, failing, peer)
			gauge(mSpoolBatches, float64(p.SpoolBatches), peer)
			gauge(mSpoolURLs, float64(p.SpoolURLs), peer)
			gauge(mBuffered, float64(p.BufferedURLs), peer)
		}
	}
	done := 0.0
	if c.done != nil && c.done() {
		done = 1
	}
	gauge(mDone, done)
}

// newMetricsRegistry registers the node's collector (and the Go runtime and
// process collectors) on a fresh registry: no global state.
func newMetricsRegistry(c *statsCollector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	reg.MustRegister(buildInfoCollector())
	reg.MustRegister(collectors.NewGoCollector())
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// buildInfoCollector exports sextant_build_info: a constant 1 whose labels
// say which binary runs, for joins in queries and for spotting a mixed
// version cluster during a rolling update.
func buildInfoCollector() prometheus.Collector {
	v := readBuildVersion()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "sextant_build_info",
		Help:        "Always 1; the labels name the running binary's version, Go version and source revision.",
		ConstLabels: prometheus.Labels{"version": v.Version, "goversion": v.GoVersion, "revision": v.Revision},
	})
	g.Set(1)
	return g
}
