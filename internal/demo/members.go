package demo

import (
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/memberserve"
	"github.com/sextant-crawler/sextant/internal/status"
	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/simweb"
)

// startMembers starts the nodes, each with its live curves, a tallied crawl
// log (busiest hosts) and the NodeStatus service (srcs[i] is set once
// member i runs), and returns each node's client to the others' NodeStatus.
func startMembers(o Options, web *simweb.Web, srv *simweb.Server, traces *[]*traceFile, warcs *[]*warc.Writer,
	logs *[]*crawl.TalliedLog, cs []*Curves, srcs []*StatusSource, cp **controlPlane) ([]*crawl.Member, []*status.Peers, error) {
	members, seats, err := crawl.LoopbackCluster(filepath.Join(o.DataDir, "pki"), o.Nodes)
	if err != nil {
		return nil, nil, err
	}
	if !o.NoEtcd {
		if *cp, err = startControl(o.DataDir, members, seats); err != nil {
			for _, s := range seats {
				s.Listener.Close()
			}
			return nil, nil, err
		}
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
		var full, crossTrace func(uint64)
		if err == nil && o.Traces {
			full, crossTrace, err = openTraces(filepath.Join(o.DataDir, ids[i]), traces)
		}
		var ww crawl.WARCWriter
		if err == nil && o.WARCDir != "" {
			var w *warc.Writer
			if err = os.MkdirAll(o.WARCDir, 0o755); err == nil {
				w, err = warc.NewWriter(warc.Options{Dir: o.WARCDir, NodeID: ids[i], Software: "sextant/" + crawl.Version(), Compression: o.WARCCompression})
			}
			if err == nil {
				*warcs = append(*warcs, w)
				ww = w
			}
		}
		var tl *crawl.TalliedLog
		if err == nil {
			if err = os.MkdirAll(filepath.Join(o.DataDir, ids[i]), 0o755); err == nil {
				tl, err = crawl.OpenTalliedLog(filepath.Join(o.DataDir, ids[i], "crawl.log"), o.Logger)
			}
			if err == nil {
				*logs = append(*logs, tl)
			}
		}
		lazy := &lazySource{id: ids[i]}
		if err == nil {
			var m *crawl.Member
			m, err = memberserve.Start(memberOptions(o, i, ids[i], web, srv, filter, members, seats[i], *cp, full, crossTrace, ww, tl, lazy, cs[i]))
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

// memberOptions are node i's: crawl.DefaultMemberOptions with the demo's
// web, politeness (fast: simweb is on loopback) and instruments.
func memberOptions(o Options, i int, id string, web *simweb.Web, srv *simweb.Server, filter *extract.Filter,
	members []hostsplit.Member, seat crawl.LoopbackSeat, cp *controlPlane, full, crossTrace func(uint64),
	ww crawl.WARCWriter, tl *crawl.TalliedLog, lazy *lazySource, cs *Curves) crawl.MemberOptions {
	mo := crawl.DefaultMemberOptions()
	mo.Services = func(s grpc.ServiceRegistrar) { status.Register(s, lazy) }
	mo.CrossTrace = crossTrace // the full trace is the node's: it sees local links too
	mo.Self, mo.Members, mo.TLS, mo.Listener = id, members, seat.TLS, seat.Listener
	mo.PeerCacheSize, mo.WireCoalesce, mo.Control = o.PeerCache, o.WireCoalesce, cp.control(i)
	if o.PeerCache < 0 {
		mo.PeerCacheAlgo = "none"
	}
	n := &mo.Node
	n.DataDir = filepath.Join(o.DataDir, id)
	n.Identity, n.ForceIdentity = crawl.NewIdentity("demo", web.Seeds()), o.Force
	n.Workers = o.Workers
	n.Fetcher.AllowPrivate, n.Fetcher.DialContext, n.Fetcher.TLSConfig = true, srv.DialContext, srv.TLSClientConfig()
	n.Fetcher.FetchTimeout = 5 * time.Second
	n.Frontier.MinDelay, n.Frontier.MaxDelay = 0, time.Second
	n.Frontier.FailureBackoff, n.Frontier.MaxFailureBackoff = 50*time.Millisecond, time.Second
	n.DUEFlushInterval = 200 * time.Millisecond
	n.CachePerWorker, n.CacheShared = o.CachePerWorker, o.CacheShared
	n.Frontier.Dispatch = o.Dispatch
	n.SoftPagesPerHost = -1 // no soft budget: the demo's report as before issue 26
	n.Filter = crawl.Filter{F: filter}
	n.FullTrace, n.WARC, n.CrawlLog = full, ww, tl.Log
	// the live curves, fed once per page
	n.FrontObserverBatch, n.RemoteObserverBatch = cs.Front.ObserveBatch, cs.Cross.ObserveBatch
	return mo
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
	return CacheConfig{Workers: o.Workers, CachePerWorker: o.CachePerWorker, CacheShared: o.CacheShared, PeerCache: max(o.PeerCache, 0), Dispatch: o.Dispatch}
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
