package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/mrc"
	"github.com/sextant-crawler/sextant/internal/report"
	"github.com/sextant-crawler/sextant/internal/status"
)

// Curves are one node's live miss-ratio curve estimators (SHARDS): the
// stream into its front caches and the stream bound for its peers (into
// the per-peer splitter caches). Give Front.ObserveBatch to
// crawl.Options.FrontObserverBatch and Cross.ObserveBatch to
// crawl.Options.RemoteObserverBatch (one call per page).
type Curves struct {
	Front, Cross *mrc.Shared
}

// NewCurves returns estimators with mrc.Economy settings.
func NewCurves() (*Curves, error) {
	f, err := mrc.NewShared(mrc.Economy)
	if err != nil {
		return nil, err
	}
	c, err := mrc.NewShared(mrc.Economy)
	if err != nil {
		return nil, err
	}
	return &Curves{Front: f, Cross: c}, nil
}

// StatusSource is the status page's Source for one cluster member: its
// node's and splitter's counters, the live curves of its front caches and
// per-peer caches with sizing advice, and its busiest and most-delayed
// hosts. Snapshot is safe for concurrent use.
type StatusSource struct {
	Member *crawl.Member
	Curves *Curves          // optional
	Tally  *crawl.HostTally // optional: busiest hosts
	Start  time.Time        // for rates; default the first Snapshot
	Hosts  int              // busiest / most-delayed hosts shown; default 10
	Cache  CacheConfig      // the sizes the member runs with
	once   sync.Once
}

// CacheConfig is how a member's caches are sized (for the advice).
type CacheConfig = report.CacheConfig

// Snapshot implements status.Source.
func (s *StatusSource) Snapshot() status.Snapshot {
	s.once.Do(func() {
		if s.Start.IsZero() {
			s.Start = time.Now()
		}
	})
	m := s.Member
	st, spl := m.Node.Stats(), m.Split.Stats()
	elapsed := max(time.Since(s.Start).Seconds(), 1e-9)
	snap := status.Snapshot{
		Node: st.ID, Time: time.Now(), Uptime: elapsed, Pages: st.Fetches, Bytes: st.Bytes,
		Outcomes: map[string]uint64{"2xx": st.FetchOK, "3xx": st.FetchRedirect, "4xx/5xx": st.FetchHTTPErr,
			"error": st.FetchErr, "robots": st.RobotsDisallowed},
		Frontier: st.Frontier.Queued, DUE: int64(st.DUE.EntriesOnDisk), Fenced: st.Fenced,
		Latency: []status.Latency{status.LatencyOf("fetch", st.Fetcher.FetchSeconds), status.LatencyOf("ttfb", st.Fetcher.TTFBSeconds),
			status.LatencyOf("dns", st.Fetcher.DNSSeconds), status.LatencyOf("tls", st.Fetcher.TLSSeconds)},
	}
	if r := st.Revisit; r.Enabled {
		snap.Outcomes["304"] = r.NotModified
		snap.Revisit = map[string]uint64{"scheduled": uint64(r.Scheduled), "queued": r.Queued, "changed": r.Changed, "unchanged": r.Unchanged, "304": r.NotModified}
	}
	var frontCurves, crossCurves map[string][]mrc.Point
	if s.Curves != nil {
		frontCurves, crossCurves = s.Curves.Front.Curves(), s.Curves.Cross.Curves()
	}
	c := s.Cache
	front := status.Cache{Name: c.FrontName(), Size: c.CachePerWorker,
		Lookups: st.CacheHits + st.CacheMisses, Hits: st.CacheHits, Curves: frontCurves}
	if frontCurves != nil {
		a := mrc.MakeAdvice(frontCurves[mrc.CLOCK], c.CachePerWorker, c.Workers, float64(st.LinksLocal)/elapsed)
		front.Advice = &a
		if !c.CacheShared && c.Workers > 1 {
			front.Note = "The curve is of one cache holding the workers' total size (what --cache-shared runs); " +
				"each per-worker cache sees only its worker's links: its hit rate is the one in the title."
		}
	}
	snap.Caches = append(snap.Caches, front)
	if len(spl.Peers) > 0 {
		cross := status.Cache{Name: "per-peer splitter caches", Size: c.PeerCache, Unit: "peer",
			Lookups: spl.Total.Discovered, Hits: spl.Total.Suppressed, Curves: crossCurves}
		if crossCurves != nil {
			// The peers' caches partition the stream by owner: together
			// they act as one cache of PeerCache × peers entries.
			a := mrc.MakeAdvice(crossCurves[mrc.CLOCK], c.PeerCache, max(spl.NumPeers(), 1), float64(spl.Total.Discovered)/elapsed)
			cross.Advice = &a
		}
		snap.Caches = append(snap.Caches, cross)
	}
	for _, p := range spl.Peers {
		if p.Peer == spl.Self {
			continue
		}
		// Up: nothing refused, and either nothing waits in the spool or the
		// peer has been acknowledging batches since its last failure.
		up := p.RejectedByPeer == 0 && (p.SpoolBatches == 0 || (p.AckedBatches > 0 && !p.Failing))
		snap.Peers = append(snap.Peers, status.Peer{ID: string(p.Peer), Up: up,
			SentURLs: p.SentURLs, RecvURLs: p.ReceivedURLs, SentBytes: p.WireBytes, Spool: int64(p.SpoolURLs),
			LastError: p.LastError, LastErrorKind: p.LastErrorKind, LastErrorAt: p.LastErrorAt})
	}
	k := s.Hosts
	if k <= 0 {
		k = 10
	}
	fetches := map[string]uint64{}
	if s.Tally != nil {
		for _, h := range s.Tally.Busiest(k) {
			fetches[h.Host] = h.Fetches
			snap.Busiest = append(snap.Busiest, status.Host{Host: h.Host, Fetches: h.Fetches, Bytes: h.Bytes,
				FetchMS: float64(h.Time.Milliseconds()) / float64(max(h.Fetches, 1))})
		}
	}
	for _, h := range m.Node.MostDelayedHosts(k) {
		f, ok := fetches[h.Host]
		if !ok && s.Tally != nil {
			f = s.Tally.Count(h.Host)
		}
		snap.Delayed = append(snap.Delayed, status.Host{Host: h.Host, Fetches: f,
			DelayMS: float64(h.Wait.Microseconds()) / 1000, Failures: h.Failures})
	}
	return snap
}

// statusPages serves one status page per node under /<node-id>/ on a
// loopback listener; each node's cluster view asks the other nodes over
// their NodeStatus gRPC service (registered on each member's mTLS server).
type statusPages struct {
	srv      *http.Server
	ln       net.Listener
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	handlers []*status.Handler
	peers    []*status.Peers
}

func startStatus(addr string, ms []*crawl.Member, srcs []*StatusSource, peers []*status.Peers) (*statusPages, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("demo: status listen: %w", err)
	}
	sp := &statusPages{ln: ln, peers: peers}
	ctx, cancel := context.WithCancel(context.Background())
	sp.cancel = cancel
	mux := http.NewServeMux()
	for i, m := range ms {
		h, err := status.New(status.Options{Source: srcs[i], Cluster: peers[i].Cluster(srcs[i]),
			Title: "Sextant demo — " + m.Node.Stats().ID})
		if err != nil {
			ln.Close()
			cancel()
			return nil, err
		}
		sp.handlers = append(sp.handlers, h)
		sp.wg.Add(1)
		go func() { defer sp.wg.Done(); h.Run(ctx) }()
		prefix := "/" + m.Node.Stats().ID
		mux.Handle(prefix+"/", http.StripPrefix(prefix, h))
	}
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/"+ms[0].Node.Stats().ID+"/?cluster=1", http.StatusFound)
	})
	sp.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	sp.wg.Add(1)
	go func() {
		defer sp.wg.Done()
		if err := sp.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener is ours; nothing else to report
		}
	}()
	return sp, nil
}

// URL is the status page of the first node (with the cluster view).
func (sp *statusPages) URL() string { return "http://" + sp.ln.Addr().String() + "/" }

func (sp *statusPages) close() {
	sp.srv.Close()
	sp.cancel()
	sp.wg.Wait()
}
