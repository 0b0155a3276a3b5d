// Package demo runs Sextant's main job on an embedded default: a simweb
// synthetic web on loopback crawled by an N-node cluster in one process —
// real gRPC, real mTLS from a fresh cluster CA, separate data dirs — with a
// live progress display and a final report checked against simweb's oracle.
//
// Run owns everything it starts and stops it before returning.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/mrc"
	"github.com/sextant-crawler/sextant/internal/status"
	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/simweb"
)

// ErrInvalidOptions wraps every problem Options.Validate finds.
var ErrInvalidOptions = errors.New("demo: invalid options")

// Options configure a demo run.
type Options struct {
	// Web is the synthetic web; default simweb.DefaultConfig().
	Web simweb.Config
	// Nodes is the cluster size; default 3.
	Nodes int
	// Workers per node; default 32.
	Workers int
	// CachePerWorker and PeerCache size the front caches; defaults 512
	// and 4096 entries. PeerCache < 0 runs without per-peer caches.
	CachePerWorker, PeerCache int
	// WireCoalesce is how long a batch spooled for a peer may wait for
	// later ones to share its wire message (crawl.MemberOptions); default
	// 500 ms, < 0 sends every batch alone.
	WireCoalesce time.Duration
	// CacheShared gives each node one front cache of CachePerWorker ×
	// Workers entries shared by its workers instead of one per worker.
	CacheShared bool
	// DataDir holds the nodes' data dirs and the PKI; default a temporary
	// directory removed at the end.
	DataDir string
	// Progress is how often a progress line is printed; default 1 s.
	Progress time.Duration
	// Live rewrites one progress line in place (for a terminal) instead of
	// printing a line each time.
	Live bool
	// ReportJSON, if set, receives the final report as JSON.
	ReportJSON string
	// Traces writes each node's full trace (every URL entering its host
	// splitter) and cross subtrace (URLs bound for peers) in the cache
	// trace format to DataDir/node-i/{full,cross}.trace, for `crawler
	// cachesim`. Set DataDir too, or the traces are removed with it.
	Traces bool
	// WARCDir, if set, makes every node archive its fetches as WARC/1.1
	// files WARCDir/<node>-*.warc.gz. Off by default.
	WARCDir string
	// StatusAddr is where the live status pages (one per node, with live
	// miss-ratio curves) are served; default "127.0.0.1:0"; "off" disables
	// them. It must be a loopback address unless the operator chooses
	// otherwise.
	StatusAddr string
	// StatusReady, if set, is called with the status page's URL once the
	// crawl runs.
	StatusReady func(url string)
}

// EnsureDefaults fills zero fields.
func (o *Options) EnsureDefaults() {
	if o.Web.Hosts == 0 {
		o.Web = simweb.DefaultConfig()
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Workers == 0 {
		o.Workers = 32
	}
	if o.CachePerWorker == 0 {
		o.CachePerWorker = 512
	}
	if o.PeerCache == 0 {
		o.PeerCache = 4096
	}
	if o.Progress == 0 {
		o.Progress = time.Second
	}
	if o.StatusAddr == "" {
		o.StatusAddr = "127.0.0.1:0"
	}
}

// peerCacheAlgo is the member's per-peer cache algorithm: "none" for
// PeerCache < 0, else the default.
func (o *Options) peerCacheAlgo() string {
	if o.PeerCache < 0 {
		return "none"
	}
	return ""
}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	var errs []error
	if o.Nodes < 1 || o.Nodes > 16 {
		errs = append(errs, fmt.Errorf("%w: nodes %d not in [1, 16]", ErrInvalidOptions, o.Nodes))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("%w: workers %d < 1", ErrInvalidOptions, o.Workers))
	}
	if o.CachePerWorker < 0 {
		errs = append(errs, fmt.Errorf("%w: negative cache size", ErrInvalidOptions))
	}
	if err := o.Web.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: web: %v", ErrInvalidOptions, err))
	}
	return errors.Join(errs...)
}

// NodeReport is one node's share of the final report.
type NodeReport struct {
	ID               string  `json:"id"`
	Fetches          uint64  `json:"fetches"`
	PagesPerSecond   float64 `json:"pages_per_second"`
	Bytes            uint64  `json:"bytes"`
	LinksLocal       uint64  `json:"links_local"`
	LinksRemote      uint64  `json:"links_remote"`
	FrontCacheHit    float64 `json:"front_cache_hit_rate"`
	RemoteDiscovered uint64  `json:"remote_discovered"`
	RemoteSuppressed uint64  `json:"remote_suppressed_by_cache"`
	RemoteSent       uint64  `json:"remote_sent"`
	WireBytes        uint64  `json:"wire_bytes"`
	WireMessages     uint64  `json:"wire_messages"`
	RawBytes         uint64  `json:"raw_url_bytes"`
	Received         uint64  `json:"received_from_peers"`
	DUEEntries       uint64  `json:"due_entries_on_disk"`
	DUEBytes         int64   `json:"due_bytes_on_disk"`
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

// Report is the final report of a demo run.
type Report struct {
	Nodes            int          `json:"nodes"`
	Hosts            int          `json:"hosts"`
	Elapsed          float64      `json:"elapsed_seconds"`
	Fetches          uint64       `json:"fetches"`
	PagesPerSecond   float64      `json:"pages_per_second"`
	OracleURLs       int          `json:"oracle_urls"`
	DistinctFetched  int          `json:"distinct_fetched"`
	FetchedTwice     int          `json:"fetched_twice"`
	OracleMatch      bool         `json:"oracle_match"`
	OracleDiff       string       `json:"oracle_diff,omitempty"`
	LocalShare       float64      `json:"local_share"`
	FrontCacheHit    float64      `json:"front_cache_hit_rate"`
	FrontCacheShared bool         `json:"front_cache_shared"` // one per node, not one per worker
	FrontCacheSize   int          `json:"front_cache_entries_per_worker"`
	PeerCacheSize    int          `json:"peer_cache_entries"`
	TrafficReduction float64      `json:"cross_machine_traffic_reduction"`
	WireBytesPerURL  float64      `json:"wire_bytes_per_cross_url"`
	WireRatio        float64      `json:"wire_bytes_over_raw"`
	URLsPerMessage   float64      `json:"cross_urls_per_wire_message"`
	DUEBytesPerURL   float64      `json:"due_disk_bytes_per_url"`
	PerNode          []NodeReport `json:"per_node"`
}

// Run builds the web, starts the cluster, crawls to the end (or until ctx
// is cancelled), prints progress and the report to out and returns it.
func Run(ctx context.Context, o Options, out io.Writer) (*Report, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.DataDir == "" {
		dir, err := os.MkdirTemp("", "sextant-demo-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.DataDir = dir
	}
	web, err := simweb.New(o.Web)
	if err != nil {
		return nil, err
	}
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{})
	if err != nil {
		return nil, fmt.Errorf("demo: oracle: %w", err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLog: true})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	fmt.Fprintf(out, "simweb: %d hosts *.%s on %s; the oracle expects %d URLs (+%d trap hosts)\n",
		web.NumHosts(), web.Domain(), srv.Addr(), oracle.Size(), len(oracle.TrapHosts))

	var traces []*traceFile
	defer func() {
		for _, t := range traces {
			t.close()
		}
	}()
	var warcs []*warc.Writer
	defer func() {
		for _, w := range warcs {
			w.Close()
		}
	}()
	cs := make([]*Curves, o.Nodes)
	for i := range cs {
		if cs[i], err = NewCurves(); err != nil {
			return nil, err
		}
	}
	var logs []*crawl.TalliedLog
	defer func() {
		for _, l := range logs {
			l.Close()
		}
	}()
	srcs := make([]*StatusSource, o.Nodes)
	members, peers, err := startMembers(o, web, srv, &traces, &warcs, &logs, cs, srcs)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, p := range peers {
			p.Close()
		}
		for _, m := range members {
			m.Close()
		}
	}()
	fmt.Fprintf(out, "cluster: %d nodes over mTLS gRPC:", len(members))
	for _, m := range members {
		fmt.Fprintf(out, " %s@%s", m.Node.Stats().ID, m.Addr())
	}
	fmt.Fprintf(out, "; %d workers each; data in %s\n", o.Workers, o.DataDir)

	statusURL := ""
	if o.StatusAddr != "off" {
		sp, err := startStatus(o.StatusAddr, members, srcs, peers)
		if err != nil {
			return nil, err
		}
		defer sp.close()
		statusURL = sp.URL()
		fmt.Fprintf(out, "status pages with live miss-ratio curves: %s\n", statusURL)
	}
	start := time.Now()
	for _, m := range members {
		if err := m.Seed(ctx, web.Seeds()); err != nil {
			return nil, err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	for i, m := range members {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.Run(ctx) }()
	}
	if o.StatusReady != nil && statusURL != "" {
		o.StatusReady(statusURL) // the crawl is running; the callback must return promptly
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	progress(ctx, o, out, members, start, oracle.Size(), finished)
	<-finished
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		fmt.Fprintln(out, "\ninterrupted: the crawl state is in", o.DataDir)
	}
	for _, t := range traces {
		if err := t.close(); err != nil {
			return nil, err
		}
	}
	traces = nil
	for _, w := range warcs {
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("demo: warc: %w", err)
		}
	}
	warcs = nil
	rep := buildReport(o, members, elapsed, oracle, web, cs)
	writeText(out, rep)
	if o.ReportJSON != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(o.ReportJSON, append(b, '\n'), 0o644); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// startMembers starts the nodes, each with its live curves, a tallied crawl
// log (busiest hosts) and the NodeStatus service (srcs[i] is set once
// member i runs), and returns each node's client to the others' NodeStatus.
func startMembers(o Options, web *simweb.Web, srv *simweb.Server, traces *[]*traceFile, warcs *[]*warc.Writer,
	logs *[]*crawl.TalliedLog, cs []*Curves, srcs []*StatusSource) ([]*crawl.Member, []*status.Peers, error) {
	members, seats, err := crawl.LoopbackCluster(filepath.Join(o.DataDir, "pki"), o.Nodes)
	if err != nil {
		return nil, nil, err
	}
	lis := make([]net.Listener, len(seats))
	ids := make([]string, len(seats))
	for i, s := range seats {
		lis[i], ids[i] = s.Listener, s.ID
	}
	filter, err := extract.NewFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{web.Domain()}, MaxRepeatedSegments: -1})
	if err != nil {
		return nil, nil, err
	}
	var out []*crawl.Member
	for i := range ids {
		tn := seats[i].TLS
		var full, crossTrace func(uint64)
		if err == nil && o.Traces {
			full, crossTrace, err = openTraces(filepath.Join(o.DataDir, ids[i]), traces)
		}
		crossCurve := cs[i].Cross.Observe
		cross := crossCurve
		if crossTrace != nil {
			cross = func(fp uint64) { crossTrace(fp); crossCurve(fp) }
		}
		var ww crawl.WARCWriter
		if err == nil && o.WARCDir != "" {
			var w *warc.Writer
			if err = os.MkdirAll(o.WARCDir, 0o755); err == nil {
				w, err = warc.NewWriter(warc.Options{Dir: o.WARCDir, Prefix: ids[i]})
			}
			if err == nil {
				*warcs = append(*warcs, w)
				ww = w
			}
		}
		var tl *crawl.TalliedLog
		if err == nil {
			if err = os.MkdirAll(filepath.Join(o.DataDir, ids[i]), 0o755); err == nil {
				tl, err = crawl.OpenTalliedLog(filepath.Join(o.DataDir, ids[i], "crawl.log"))
			}
			if err == nil {
				*logs = append(*logs, tl)
			}
		}
		lazy := &lazySource{id: ids[i]}
		if err == nil {
			var m *crawl.Member
			m, err = crawl.StartMember(crawl.MemberOptions{
				Services:   func(s grpc.ServiceRegistrar) { status.Register(s, lazy) },
				CrossTrace: cross, // the full trace is the node's: it sees local links too
				Node: crawl.Options{
					DataDir: filepath.Join(o.DataDir, ids[i]),
					Workers: o.Workers,
					Fetcher: fetcher.Options{AllowPrivate: true, DialContext: srv.DialContext, FetchTimeout: 5 * time.Second},
					Frontier: frontier.Options{MinDelay: 0, MaxDelay: time.Second,
						FailureBackoff: 50 * time.Millisecond, MaxFailureBackoff: time.Second},
					DUEFlushInterval: 200 * time.Millisecond,
					CachePerWorker:   o.CachePerWorker,
					CacheShared:      o.CacheShared,
					MaxPagesPerHost:  1000,
					Filter:           crawl.Filter{F: filter},
					FullTrace:        full,
					WARC:             ww,
					FrontObserver:    cs[i].Front.Observe,
					CrawlLog:         tl.Log,
				},
				Self: ids[i], Members: members, TLS: tn, Listener: lis[i], PeerCacheSize: o.PeerCache,
				PeerCacheAlgo: o.peerCacheAlgo(), WireCoalesce: o.WireCoalesce,
			})
			if err == nil {
				srcs[i] = &StatusSource{Member: m, Curves: cs[i], Tally: tl.Tally, Cache: o.cacheConfig()}
				lazy.src.Store(srcs[i])
				out = append(out, m)
				continue
			}
		}
		for _, m := range out {
			m.Close()
		}
		for _, l := range lis[i:] {
			l.Close()
		}
		return nil, nil, err
	}
	var peers []*status.Peers
	for i := range out {
		var pa []status.PeerAddr
		for j := range out {
			if j != i {
				pa = append(pa, status.PeerAddr{ID: ids[j], Addr: out[j].Addr()})
			}
		}
		p, err := status.DialPeers(pa, credentials.NewTLS(seats[i].TLS.ClientConfig(ids)), 2*time.Second)
		if err != nil {
			for _, p := range peers {
				p.Close()
			}
			for _, m := range out {
				m.Close()
			}
			return nil, nil, err
		}
		peers = append(peers, p)
	}
	return out, peers, nil
}

// lazySource answers for a member not started yet.
type lazySource struct {
	id  string
	src atomic.Pointer[StatusSource]
}

func (l *lazySource) Snapshot() status.Snapshot {
	if s := l.src.Load(); s != nil {
		return s.Snapshot()
	}
	return status.Snapshot{Node: l.id, Error: "starting"}
}

func (o Options) cacheConfig() CacheConfig {
	return CacheConfig{Workers: o.Workers, CachePerWorker: o.CachePerWorker, CacheShared: o.CacheShared, PeerCache: max(o.PeerCache, 0)}
}

func openTraces(dir string, traces *[]*traceFile) (full, cross func(uint64), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	ft, err := createTrace(filepath.Join(dir, "full.trace"))
	if err != nil {
		return nil, nil, err
	}
	*traces = append(*traces, ft)
	ct, err := createTrace(filepath.Join(dir, "cross.trace"))
	if err != nil {
		return nil, nil, err
	}
	*traces = append(*traces, ct)
	return ft.add, ct.add, nil
}

func progress(ctx context.Context, o Options, out io.Writer, ms []*crawl.Member, start time.Time, expect int, finished <-chan struct{}) {
	t := time.NewTicker(o.Progress)
	defer t.Stop()
	var last uint64
	lastT := start
	for {
		select {
		case <-finished:
			if o.Live {
				fmt.Fprintln(out)
			}
			return
		case <-t.C:
		}
		var fetched, queued, sent, disc uint64
		per := ""
		for _, m := range ms {
			st := m.Node.Stats()
			fetched += st.Fetches
			queued += uint64(st.Frontier.Queued)
			sp := m.Split.Stats()
			sent += sp.Total.SentURLs
			disc += sp.Total.Discovered
			per += fmt.Sprintf(" %s:%d", st.ID, st.Fetches)
		}
		now := time.Now()
		rate := float64(fetched-last) / now.Sub(lastT).Seconds()
		last, lastT = fetched, now
		red := 0.0
		if disc > 0 {
			red = 1 - float64(sent)/float64(disc)
		}
		line := fmt.Sprintf("%6.1fs fetched %d/%d (%.0f%%) %.0f pages/s, queued %d, cross URLs sent %d of %d (-%.0f%%) |%s",
			now.Sub(start).Seconds(), fetched, expect, 100*float64(fetched)/float64(max(expect, 1)), rate, queued, sent, disc, 100*red, per)
		if o.Live {
			fmt.Fprintf(out, "\r\033[K%s", line)
		} else {
			fmt.Fprintln(out, line)
		}
	}
}

func buildReport(o Options, ms []*crawl.Member, elapsed time.Duration, oracle *simweb.OracleResult, web *simweb.Web, cs []*Curves) *Report {
	r := &Report{Nodes: len(ms), Hosts: web.NumHosts(), Elapsed: elapsed.Seconds(), OracleURLs: oracle.Size(),
		FrontCacheShared: o.CacheShared, FrontCacheSize: o.CachePerWorker, PeerCacheSize: max(o.PeerCache, 0)}
	var hits, misses, local, remote, disc, sent, wire, msgs, raw, dueEntries uint64
	var dueBytes int64
	count := map[string]int{}
	for i, m := range ms {
		st, sp := m.Node.Stats(), m.Split.Stats()
		nr := NodeReport{ID: st.ID, Fetches: st.Fetches, PagesPerSecond: float64(st.Fetches) / elapsed.Seconds(), Bytes: st.Bytes,
			LinksLocal: st.LinksLocal, LinksRemote: st.LinksRemote, FrontCacheHit: st.CacheHitRate(),
			RemoteDiscovered: sp.Total.Discovered, RemoteSuppressed: sp.Total.Suppressed, RemoteSent: sp.Total.SentURLs,
			WireBytes: sp.Total.WireBytes, WireMessages: sp.Total.WireMessages, RawBytes: sp.Total.RawBytes, Received: st.Received,
			DUEEntries: st.DUE.EntriesOnDisk, DUEBytes: st.DUE.BytesOnDisk, DUEMerges: st.DUE.Merges,
			RobotsDisallowed: st.RobotsDisallowed, HTTPErrors: st.FetchHTTPErr, FetchErrors: st.FetchErr}
		if i < len(cs) && cs[i] != nil {
			secs := max(elapsed.Seconds(), 1e-9)
			if c, _ := cs[i].Front.Curve(mrc.CLOCK); c != nil {
				a := mrc.MakeAdvice(c, o.CachePerWorker, o.Workers, float64(st.LinksLocal)/secs)
				nr.FrontAdvice = &a
			}
			if c, _ := cs[i].Cross.Curve(mrc.CLOCK); c != nil && len(ms) > 1 {
				a := mrc.MakeAdvice(c, max(o.PeerCache, 0), peerCount(sp), float64(sp.Total.Discovered)/secs)
				nr.PeerAdvice = &a
			}
		}
		r.PerNode = append(r.PerNode, nr)
		r.Fetches += st.Fetches
		hits, misses = hits+st.CacheHits, misses+st.CacheMisses
		local, remote = local+st.LinksLocal, remote+st.LinksRemote
		disc, sent = disc+sp.Total.Discovered, sent+sp.Total.SentURLs
		wire, raw = wire+sp.Total.WireBytes, raw+sp.Total.RawBytes
		msgs += sp.Total.WireMessages
		dueEntries, dueBytes = dueEntries+st.DUE.EntriesOnDisk, dueBytes+st.DUE.BytesOnDisk
		if es, err := crawl.ReadLogFile(filepath.Join(o.DataDir, st.ID, "crawl.log")); err == nil {
			for _, e := range es {
				if e.Outcome != crawl.OutcomeRobots {
					count[e.URL]++
				}
			}
		}
	}
	ratio := func(a, b uint64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	r.PagesPerSecond = float64(r.Fetches) / elapsed.Seconds()
	r.FrontCacheHit = ratio(hits, hits+misses)
	r.LocalShare = ratio(local, local+remote)
	if disc > 0 {
		r.TrafficReduction = 1 - ratio(sent, disc)
	}
	r.WireBytesPerURL = ratio(wire, sent)
	r.WireRatio = ratio(wire, raw)
	r.URLsPerMessage = ratio(sent, msgs)
	if dueEntries > 0 {
		r.DUEBytesPerURL = float64(dueBytes) / float64(dueEntries)
	}
	fetched := make([]string, 0, len(count))
	for u, c := range count {
		fetched = append(fetched, u)
		if c > 1 {
			r.FetchedTwice++
		}
	}
	sort.Strings(fetched)
	r.DistinctFetched = len(fetched)
	if err := oracle.Check(fetched); err != nil {
		r.OracleDiff = err.Error()
		if len(r.OracleDiff) > 400 {
			r.OracleDiff = r.OracleDiff[:400] + "…"
		}
	} else {
		r.OracleMatch = true
	}
	return r
}

func writeText(w io.Writer, r *Report) {
	fmt.Fprintf(w, "\n== Sextant demo report: %d nodes, %d hosts, %.1f s\n", r.Nodes, r.Hosts, r.Elapsed)
	match := "EQUALS the oracle's set"
	if !r.OracleMatch {
		match = "DIFFERS from the oracle's set: " + r.OracleDiff
	}
	fmt.Fprintf(w, "fetched         %d requests, %d distinct URLs, %d fetched twice; %s (%d URLs)\n",
		r.Fetches, r.DistinctFetched, r.FetchedTwice, match, r.OracleURLs)
	fmt.Fprintf(w, "throughput      %.0f pages/s cluster-wide\n", r.PagesPerSecond)
	fmt.Fprintf(w, "links           %.1f%% local, %.1f%% to peers\n", 100*r.LocalShare, 100*(1-r.LocalShare))
	if r.FrontCacheShared {
		fmt.Fprintf(w, "front caches    %.1f%% hit rate (one shared by the workers of each node, %d entries, before the DUE)\n",
			100*r.FrontCacheHit, r.FrontCacheSize*max(workersOf(r), 1))
	} else {
		fmt.Fprintf(w, "front caches    %.1f%% hit rate (per-worker, %d entries each, before the DUE)\n", 100*r.FrontCacheHit, r.FrontCacheSize)
	}
	if r.Nodes > 1 {
		fmt.Fprintf(w, "cross-machine   traffic reduced by %.1f%% (per-peer caches + batch dedup); %.1f wire bytes per URL sent (%.0f%% of raw, %.0f URLs per message)\n",
			100*r.TrafficReduction, r.WireBytesPerURL, 100*r.WireRatio, r.URLsPerMessage)
	} else {
		fmt.Fprintln(w, "cross-machine   none (one node)")
	}
	fmt.Fprintf(w, "DUE             %.2f disk bytes per URL\n", r.DUEBytesPerURL)
	writeAdvice(w, r)
	fmt.Fprintf(w, "%-8s %8s %8s %8s %8s %9s %9s %9s %8s\n", "node", "fetches", "pages/s", "cache", "local", "remote", "suppr.", "sent", "recv")
	for _, n := range r.PerNode {
		fmt.Fprintf(w, "%-8s %8d %8.0f %7.1f%% %8d %9d %9d %9d %8d\n", n.ID, n.Fetches, n.PagesPerSecond, 100*n.FrontCacheHit,
			n.LinksLocal, n.RemoteDiscovered, n.RemoteSuppressed, n.RemoteSent, n.Received)
	}
}

func workersOf(r *Report) int {
	for _, n := range r.PerNode {
		if n.FrontAdvice != nil {
			return n.FrontAdvice.Workers
		}
	}
	return 0
}

// writeAdvice prints each node's cache-size advice from its live CLOCK
// miss-ratio curves.
func writeAdvice(w io.Writer, r *Report) {
	per := "/worker"
	if r.FrontCacheShared {
		per = "/worker (×workers shared)"
	}
	line := func(label string, a *mrc.Advice, unit, what string) {
		s := fmt.Sprintf("%-15s %s now %d%s miss %.1f%% (%.0f %s/s); knee %d%s miss %.1f%%, %s",
			label, what, a.CurrentPerWorker, unit, 100*a.CurrentMiss, a.SentPerSec, "URLs", a.KneePerWorker, unit, 100*a.KneeMiss, savesText(a.KneeSavedPerSec))
		if a.Reached20 {
			s += fmt.Sprintf("; 20%% miss at %d%s, %s", a.K20PerWorker, unit, savesText(a.K20SavedPerSec))
		} else {
			s += "; 20% miss not reached at any size"
		}
		fmt.Fprintln(w, s)
	}
	for _, n := range r.PerNode {
		if n.FrontAdvice != nil {
			line("cache advice", n.FrontAdvice, per, n.ID+" front (DUE lookups):")
		}
		if n.PeerAdvice != nil {
			line("", n.PeerAdvice, " per peer", n.ID+" per-peer (cross-machine):")
		}
	}
	if !r.FrontCacheShared && workersOf(r) > 1 {
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
