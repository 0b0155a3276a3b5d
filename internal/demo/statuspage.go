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
	"github.com/sextant-crawler/sextant/internal/status"
)

// curves are one node's live miss-ratio curve estimators (SHARDS): the
// stream into its front caches and the stream bound for its peers.
type curves struct {
	front, cross *mrc.Shared
}

func newCurves() (*curves, error) {
	f, err := mrc.NewShared(mrc.Economy)
	if err != nil {
		return nil, err
	}
	c, err := mrc.NewShared(mrc.Economy)
	if err != nil {
		return nil, err
	}
	return &curves{front: f, cross: c}, nil
}

// statusPages serves one status page per node under /<node-id>/ on a
// loopback listener, each also showing the whole cluster.
type statusPages struct {
	srv      *http.Server
	ln       net.Listener
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	handlers []*status.Handler
}

func startStatus(addr string, o Options, ms []*crawl.Member, cs []*curves) (*statusPages, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("demo: status listen: %w", err)
	}
	sp := &statusPages{ln: ln}
	ctx, cancel := context.WithCancel(context.Background())
	sp.cancel = cancel
	start := time.Now()
	snaps := make([]func() status.Snapshot, len(ms))
	for i, m := range ms {
		snaps[i] = func() status.Snapshot { return snapshot(o, m, cs[i], start) }
	}
	cluster := func(context.Context) []status.Snapshot {
		out := make([]status.Snapshot, len(snaps))
		for i, s := range snaps {
			out[i] = s()
		}
		return out
	}
	mux := http.NewServeMux()
	for i, m := range ms {
		h, err := status.New(status.Options{Source: status.SourceFunc(snaps[i]), Cluster: cluster,
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

func snapshot(o Options, m *crawl.Member, c *curves, start time.Time) status.Snapshot {
	st, spl := m.Node.Stats(), m.Split.Stats()
	elapsed := time.Since(start).Seconds()
	s := status.Snapshot{
		Node: st.ID, Time: time.Now(), Uptime: elapsed, Pages: st.Fetches, Bytes: st.Bytes,
		Outcomes: map[string]uint64{"2xx": st.FetchOK, "3xx": st.FetchRedirect, "4xx/5xx": st.FetchHTTPErr,
			"error": st.FetchErr, "robots": st.RobotsDisallowed},
		Frontier: st.Frontier.Queued, DUE: int64(st.DUE.EntriesOnDisk),
	}
	frontCurves := c.front.Curves()
	adv := mrc.MakeAdvice(frontCurves[mrc.CLOCK], o.CachePerWorker, o.Workers, float64(st.LinksLocal)/max(elapsed, 1e-9))
	s.Caches = append(s.Caches, status.Cache{Name: "due-front (per worker)", Size: o.CachePerWorker,
		Lookups: st.CacheHits + st.CacheMisses, Hits: st.CacheHits, Curves: frontCurves, Advice: &adv})
	crossCurves := c.cross.Curves()
	cadv := mrc.MakeAdvice(crossCurves[mrc.CLOCK], o.PeerCache, 1, float64(spl.Total.Discovered)/max(elapsed, 1e-9))
	s.Caches = append(s.Caches, status.Cache{Name: "per-peer splitter caches", Size: o.PeerCache,
		Lookups: spl.Total.Discovered, Hits: spl.Total.Suppressed, Curves: crossCurves, Advice: &cadv})
	for _, p := range spl.Peers {
		// Up: nothing refused, and either nothing waits in the spool or the
		// peer has been acknowledging batches.
		up := p.RejectedByPeer == 0 && (p.SpoolBatches == 0 || p.AckedBatches > 0)
		s.Peers = append(s.Peers, status.Peer{ID: string(p.Peer), Up: up,
			SentURLs: p.SentURLs, SentBytes: p.WireBytes, Spool: int64(p.SpoolURLs)})
	}
	return s
}
