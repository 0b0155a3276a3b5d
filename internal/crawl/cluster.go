package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// MemberOptions configure one node of a cluster: a Node plus its host
// splitter and gRPC server.
type MemberOptions struct {
	// Node configures the crawling node; its Splitter is set by the member.
	Node Options
	// Self is this node's id; Members lists every node (Self included)
	// with its gRPC address.
	Self    string
	Members []hostsplit.Member
	// TLS is this node's mTLS material (from `crawler certs`). Required:
	// peers accept only members signed by the cluster CA.
	TLS *tlsutil.Node
	// Listener is the bound gRPC listener; if nil, Self's address in
	// Members is listened on.
	Listener net.Listener
	// PeerCacheAlgo and PeerCacheSize size the per-peer front cache of the
	// splitter (hits are not sent). Defaults "clock" and 4096; "none"
	// disables it.
	PeerCacheAlgo string
	PeerCacheSize int
	// BatchMaxAge bounds how long a remote URL waits in a batch buffer
	// before it is spooled. Default 200 ms.
	BatchMaxAge time.Duration
	// FlushInterval is how long a worker's remote URLs may wait for a
	// shared flush to the spool (group commit). Default 20 ms.
	FlushInterval time.Duration
	// FullTrace and CrossTrace receive the fingerprint of every URL
	// entering the splitter and of every URL bound for a peer (for
	// `crawler cachesim`). Optional.
	FullTrace, CrossTrace func(fp uint64)
	// Logger for the splitter. Default: discard.
	Logger *slog.Logger
	// Services, if set, registers more services (e.g. the status page's
	// read-only NodeStatus) on the member's mTLS gRPC server before it
	// serves; they get the same peer authentication as the Peer service.
	Services func(grpc.ServiceRegistrar)
}

// Member is a running cluster node. Start it, Run it, Close it.
type Member struct {
	Node  *Node
	Split *hostsplit.Splitter
	srv   *grpc.Server
	lis   net.Listener
	done  chan struct{} // closed when Serve returns
	gf    *groupFlusher
	self  hostsplit.NodeID
}

// sinkRef lets the splitter deliver to the node opened after it.
type sinkRef struct{ n *Node }

func (s *sinkRef) Deliver(ctx context.Context, urls []string) error { return s.n.Deliver(ctx, urls) }

// splitAdapter is the Node's view of the splitter.
type splitAdapter struct {
	sp   *hostsplit.Splitter
	self hostsplit.NodeID
	gf   *groupFlusher
}

func (a splitAdapter) IsLocal(host string) bool { return a.sp.Owner(host) == a.self }

// Route hands remote URLs to the splitter and returns once they are durable
// (spooled), so that a page is marked done only once its links are safe.
// Workers share flushes (group commit): batches stay large, which is what
// makes front coding and compression pay on the wire.
func (a splitAdapter) Route(ctx context.Context, urls []string) error {
	if err := a.sp.Route(ctx, urls); err != nil {
		return err
	}
	return a.gf.wait(ctx)
}

// groupFlusher flushes the splitter at most once per interval on behalf of
// every worker waiting for durability.
type groupFlusher struct {
	sp       *hostsplit.Splitter
	interval time.Duration

	mu      sync.Mutex
	next    *flushRound // the round new waiters join
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

type flushRound struct {
	done chan struct{}
	err  error
}

func newGroupFlusher(sp *hostsplit.Splitter, interval time.Duration) *groupFlusher {
	g := &groupFlusher{sp: sp, interval: interval, next: &flushRound{done: make(chan struct{})},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go g.loop()
	return g
}

func (g *groupFlusher) wait(ctx context.Context) error {
	g.mu.Lock()
	r := g.next
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	case <-g.stopped:
		return ErrClosed
	}
}

func (g *groupFlusher) loop() {
	defer close(g.stopped)
	for {
		select {
		case <-g.stop:
			return
		case <-g.kick:
		}
		// Let more workers join this round.
		select {
		case <-g.stop:
			return
		case <-time.After(g.interval):
		}
		g.mu.Lock()
		r := g.next
		g.next = &flushRound{done: make(chan struct{})}
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r.err = g.sp.Flush(ctx)
		cancel()
		close(r.done)
	}
}

func (g *groupFlusher) close() {
	close(g.stop)
	<-g.stopped
}

// StartMember opens the node and the splitter and starts serving gRPC.
func StartMember(o MemberOptions) (*Member, error) {
	if o.TLS == nil {
		return nil, fmt.Errorf("%w: TLS material is required", ErrInvalidOptions)
	}
	if o.PeerCacheAlgo == "" {
		o.PeerCacheAlgo = "clock"
	}
	if o.PeerCacheSize == 0 {
		o.PeerCacheSize = 4096
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ids := make([]string, len(o.Members))
	for i, m := range o.Members {
		ids[i] = string(m.ID)
	}
	ref := &sinkRef{}
	var peerCache func() hostsplit.Cache
	if o.PeerCacheAlgo != "none" {
		if _, err := cache.New(o.PeerCacheAlgo, o.PeerCacheSize); err != nil {
			return nil, fmt.Errorf("%w: peer cache: %v", ErrInvalidOptions, err)
		}
		peerCache = func() hostsplit.Cache {
			c, _ := cache.New(o.PeerCacheAlgo, o.PeerCacheSize)
			return c
		}
	}
	m := &Member{self: hostsplit.NodeID(o.Self), done: make(chan struct{})}
	sp, err := hostsplit.New(hostsplit.Options{
		Self: m.self, Members: o.Members,
		DataDir:   filepath.Join(o.Node.DataDir, "spool"),
		Local:     ref,
		PeerCache: peerCache,
		ClientTLS: o.TLS.ClientConfig(ids),
		Status: func() hostsplit.LocalStatus {
			if ref.n == nil {
				return hostsplit.LocalStatus{}
			}
			return hostsplit.LocalStatus{Idle: ref.n.Idle(), FrontierSize: int64(ref.n.FrontierLen()), InFlight: ref.n.busy.Load()}
		},
		BatchMaxAge: o.BatchMaxAge,
		FullTrace:   o.FullTrace, CrossTrace: o.CrossTrace,
		Logger: o.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("crawl: splitter: %w", err)
	}
	m.Split = sp
	o.Node.ID = o.Self
	if o.FlushInterval == 0 {
		o.FlushInterval = 20 * time.Millisecond
	}
	m.gf = newGroupFlusher(sp, o.FlushInterval)
	o.Node.Splitter = splitAdapter{sp: sp, self: m.self, gf: m.gf}
	if m.Node, err = Open(o.Node); err != nil {
		m.gf.close()
		sp.Close()
		return nil, err
	}
	ref.n = m.Node
	m.lis = o.Listener
	if m.lis == nil {
		var addr string
		for _, mm := range o.Members {
			if mm.ID == m.self {
				addr = mm.Addr
			}
		}
		if m.lis, err = net.Listen("tcp", addr); err != nil {
			m.Node.Close()
			m.gf.close()
			sp.Close()
			return nil, fmt.Errorf("crawl: listen: %w", err)
		}
	}
	m.srv = grpc.NewServer(append(hostsplit.ServerOptions(hostsplit.Limits{}),
		grpc.Creds(credentials.NewTLS(o.TLS.ServerConfig(ids))))...)
	sp.Register(m.srv)
	if o.Services != nil {
		o.Services(m.srv)
	}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(m.lis)
	}()
	return m, nil
}

// Seed submits the seeds this member owns; others are left to their owner
// (every member is given the same seed list).
func (m *Member) Seed(ctx context.Context, seeds []string) error {
	var mine []string
	for _, s := range seeds {
		if owner, err := m.Split.Ring().OwnerOfURL(s); err != nil || owner == m.self {
			mine = append(mine, s) // a bad seed is reported by Node.Seed
		}
	}
	return m.Node.Seed(ctx, mine)
}

// Run crawls until the whole cluster has terminated (every frontier empty,
// nothing buffered, spooled or travelling) or ctx is cancelled. Members see
// termination at slightly different moments and confirm it by asking each
// other, so after Run returns keep the member serving (do not Close it) for
// a grace period of a few status rounds, or until told to stop.
func (m *Member) Run(ctx context.Context) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var runErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = m.Node.Run(rctx, false)
		cancel()
	}()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var termErr error
loop:
	for {
		select {
		case <-rctx.Done():
			break loop
		case <-t.C:
		}
		if m.Node.fr.Idle() && m.Node.busy.Load() == 0 {
			if err := m.Node.Flush(); err != nil {
				termErr = fmt.Errorf("crawl: due flush: %w", err)
				break loop
			}
		}
		done, err := m.Split.Terminated(rctx)
		if err != nil {
			continue // a peer is unreachable: keep crawling, retry later
		}
		if done {
			break loop
		}
	}
	cancel()
	wg.Wait()
	return errors.Join(runErr, termErr)
}

// Close stops serving (gracefully, with a bound) and closes the splitter
// and the node.
func (m *Member) Close() error {
	stopped := make(chan struct{})
	go func() { m.srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		m.srv.Stop()
	}
	<-m.done
	m.gf.close()
	return errors.Join(m.Split.Close(), m.Node.Close())
}

// Addr is the gRPC listen address.
func (m *Member) Addr() string { return m.lis.Addr().String() }
