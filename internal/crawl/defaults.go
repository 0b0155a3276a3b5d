package crawl

import (
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/revisit"
)

// DefaultProxy is the proxy setting of every node path (fetcher.ParseProxy
// syntax): the standard HTTPS_PROXY, HTTP_PROXY and NO_PROXY variables, as
// net/http and curl read them, never for loopback targets; with none set a
// node connects directly.
const DefaultProxy = "env"

// DefaultFetchAttempts is Options.FetchAttempts' default.
const DefaultFetchAttempts = 3

// DefaultOptions is a node's configuration before the caller changes
// anything: the one place each of its defaults is stated. The command-line
// flags (cmd/crawler), the node config file (internal/nodeconfig), the demo
// and embedding programs (package crawl at the module root) all start from
// it, so that a node configured any of these ways behaves alike (issue 26).
// DataDir is left empty: it is the caller's to choose.
func DefaultOptions() Options {
	fr := frontier.DefaultOptions()
	// Sized from Options.Workers when the node opens (EnsureDefaults):
	// frontier.DefaultOptions sizes them for one worker.
	fr.Workers, fr.BackQueues, fr.MaxBackQueues = 0, 0, 0
	// The node's Logger, unless the caller sets the frontier's own
	// (frontier.DefaultOptions fills in a discarding one).
	fr.Logger = nil
	// Any free worker takes any ready host; frontier.DispatchHostAffine
	// binds hosts to workers (issue 30).
	fr.Dispatch = frontier.DispatchAny
	wo := warc.Options{}
	wo.EnsureDefaults()
	const maxPages = 1000
	return Options{
		ID:      "n0",
		Workers: 64,
		// The fetcher's own defaults, set here so that every path
		// starts from the same values (the flags show them).
		Fetcher: fetcher.Options{
			UserAgent: fetcher.DefaultUserAgent, BodyCap: fetcher.DefaultBodyCap,
			FetchTimeout: fetcher.DefaultFetchTimeout,
			Proxy:        fetcher.ProxyFromEnvironment(), // DefaultProxy
		},
		// A fetch that times out or fails to connect is tried this many
		// times in all before it is logged as an error (fetchretry.go).
		FetchAttempts:    DefaultFetchAttempts,
		Extract:          extract.Options{MaxBytes: fetcher.DefaultBodyCap},
		Frontier:         fr,
		DUEBuffer:        1 << 18,
		DUEFlushInterval: 500 * time.Millisecond,
		CacheAlgo:        "clock",
		CachePerWorker:   512,
		ContentSeenSize:  DefaultContentSeenSize,
		MaxPagesPerHost:  maxPages,
		SoftPagesPerHost: maxPages / 2,
		PolitenessKey:    PolitenessHost,
		NoFollow:         NoFollowObey,
		Sitemaps:         SitemapsOn,
		WARCArchive:      WARCArchive{Prefix: wo.Prefix, MaxSize: wo.MaxSize, Compression: wo.Compression},
		// Off (no interval, not adaptive); the bounds apply to --revisit adaptive.
		Revisit: revisit.Options{Min: revisit.DefaultMin, Max: revisit.DefaultMax, Shrink: revisit.DefaultShrink, Grow: revisit.DefaultGrow},
	}
}

// DefaultFilterOptions are the link filter's defaults (extract's): the
// longest URL and the most repeated path segments a crawl admits.
func DefaultFilterOptions() extract.FilterOptions {
	var fo extract.FilterOptions
	fo.EnsureDefaults()
	return fo
}

// DefaultMemberOptions is a cluster member's configuration before the
// caller sets its identity, membership and TLS material: DefaultOptions for
// its node and the splitter's per-peer cache.
func DefaultMemberOptions() MemberOptions {
	return MemberOptions{
		Node:          DefaultOptions(),
		PeerCacheAlgo: "clock",
		PeerCacheSize: 4096,
		FlushInterval: 20 * time.Millisecond,
	}
}
