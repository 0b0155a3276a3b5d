package crawl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
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
	// Listener is the bound gRPC listener the caller serves the member on
	// (internal/memberserve.Start listens on Self's address in Members if
	// it is nil). The member itself serves nothing.
	Listener net.Listener
	// PeerCacheAlgo and PeerCacheSize size the per-peer front cache of the
	// splitter (hits are not sent). Defaults: DefaultMemberOptions; "none"
	// disables it.
	PeerCacheAlgo string
	PeerCacheSize int
	// BatchMaxAge bounds how long a remote URL waits in a batch buffer
	// before it is spooled. Default 200 ms.
	BatchMaxAge time.Duration
	// FlushInterval is how long a worker's remote URLs may wait for a
	// shared flush to the spool (group commit). Default: DefaultMemberOptions.
	FlushInterval time.Duration
	// WireCoalesce is how long a spooled batch may wait for later ones to
	// share its wire message (hostsplit.Options.CoalesceMaxAge): the
	// small batches of frequent group commits then travel front-coded and
	// compressed together. Default 500 ms; < 0 sends each batch alone.
	WireCoalesce time.Duration
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
	// Epoch numbers the membership Members (default 1); a newer view the
	// node adopted in a membership change (see elastic.go) is persisted
	// and wins on restart. Joining starts a node added to a running
	// cluster: Members is the view it joins; it does not seed and does not
	// fetch until `crawler cluster add` commits that view.
	Epoch   uint64
	Joining bool
	// CrawlLogPath is read in a hand-off for the URLs this node fetched
	// (they become seen-only entries at the hosts' new owner). Default
	// Node.DataDir/crawl.log when Node.CrawlLog is nil; with a custom
	// CrawlLog and no path, hand-offs carry queued URLs only.
	CrawlLogPath string
	// Control, if set, fences the member: it fetches only while Control
	// holds (fence.go). Nil: no fencing (as before issue 25).
	Control Control

	testHandoffHook func(step string) // tests: called at each hand-off step
}

// EnsureDefaults fills zero fields with DefaultMemberOptions' values, and
// the node's (Node.ID becomes Self).
func (o *MemberOptions) EnsureDefaults() {
	d := DefaultMemberOptions()
	if o.PeerCacheAlgo == "" {
		o.PeerCacheAlgo = d.PeerCacheAlgo
	}
	if o.PeerCacheSize == 0 {
		o.PeerCacheSize = d.PeerCacheSize
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = d.FlushInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Self != "" {
		o.Node.ID = o.Self
	}
	o.Node.EnsureDefaults()
}

// Validate reports every invalid field, the node's included.
func (o *MemberOptions) Validate() error {
	var errs []error
	if o.TLS == nil {
		errs = append(errs, fmt.Errorf("%w: TLS material is required", ErrInvalidOptions))
	}
	if o.Self == "" {
		errs = append(errs, fmt.Errorf("%w: Self is required", ErrInvalidOptions))
	} else if !slices.ContainsFunc(o.Members, func(m hostsplit.Member) bool { return string(m.ID) == o.Self }) {
		errs = append(errs, fmt.Errorf("%w: Self %q is not in Members", ErrInvalidOptions, o.Self))
	}
	if o.PeerCacheAlgo != "none" {
		if _, err := cache.New(o.PeerCacheAlgo, o.PeerCacheSize); err != nil {
			errs = append(errs, fmt.Errorf("%w: peer cache: %v", ErrInvalidOptions, err))
		}
	}
	if o.FlushInterval < 0 || o.BatchMaxAge < 0 {
		errs = append(errs, fmt.Errorf("%w: FlushInterval %v or BatchMaxAge %v < 0", ErrInvalidOptions, o.FlushInterval, o.BatchMaxAge))
	}
	if err := o.Node.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Member is a running cluster node. Start it, Run it, Close it.
type Member struct {
	Node  *Node
	Split *hostsplit.Splitter
	gf    *groupFlusher
	self  hostsplit.NodeID
	addr  string // Self's address in MemberOptions.Members

	serverTLS *tls.Config                 // for ServerOptions
	services  func(grpc.ServiceRegistrar) // MemberOptions.Services
	onClose   []func()                    // OnClose

	el       elastic
	seeds    []string
	reseeded atomic.Uint64
	resent   atomic.Uint64 // URLs re-sent for lost members (hostsplit.ResendLost)

	markStop, markDone chan struct{} // the spool-mark loop (markLoop)

	ctl Control // MemberOptions.Control, nil if none
	// the self-rollback loop (deadlineLoop, elastic_rollback.go)
	deadlineStop, deadlineDone chan struct{}

	closeOnce sync.Once // Close may be called again: it returns closeErr
	closeErr  error
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

// NewMember opens the node and the splitter. It serves nothing: the caller
// makes a gRPC server with ServerOptions, registers the member's services
// on it with Register, serves it, and stops it before (or while, see
// OnClose) the member closes — as internal/memberserve does.
func NewMember(o MemberOptions) (*Member, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ref := &sinkRef{}
	var peerCache func() hostsplit.Cache
	if o.PeerCacheAlgo != "none" {
		peerCache = func() hostsplit.Cache {
			c, _ := cache.New(o.PeerCacheAlgo, o.PeerCacheSize)
			return c
		}
	}
	m := &Member{self: hostsplit.NodeID(o.Self)}
	// The members accepted over mTLS follow the membership view.
	var spRef atomic.Pointer[hostsplit.Splitter]
	known := func(id hostsplit.NodeID) bool {
		if sp := spRef.Load(); sp != nil {
			return sp.Known(id)
		}
		return slices.ContainsFunc(o.Members, func(mm hostsplit.Member) bool { return mm.ID == id })
	}
	clientTLS := o.TLS.ClientConfig(nil)
	clientTLS.VerifyConnection = knownVerifier(known)
	serverTLS := o.TLS.ServerConfig(nil)
	serverTLS.VerifyConnection = knownVerifier(known)
	// The spool is checked before the splitter opens it (check.go).
	if _, err := inspectSpool(o.Node.DataDir, !o.Node.SkipOpenCheck); err != nil {
		return nil, err
	}
	sp, err := hostsplit.New(hostsplit.Options{
		Self: m.self, Members: o.Members, Epoch: o.Epoch, Joining: o.Joining,
		DataDir:   filepath.Join(o.Node.DataDir, "spool"),
		Local:     ref,
		PeerCache: peerCache,
		ClientTLS: clientTLS,
		Status: func() hostsplit.LocalStatus {
			if ref.n == nil || m.Split == nil {
				return hostsplit.LocalStatus{}
			}
			phase := m.Phase()
			return hostsplit.LocalStatus{Idle: phase == PhaseRunning && ref.n.Idle(), FrontierSize: int64(ref.n.FrontierLen()),
				InFlight: ref.n.busy.Load(), Paused: m.paused(), Phase: phase}
		},
		BatchMaxAge: o.BatchMaxAge, CoalesceMaxAge: o.WireCoalesce,
		FullTrace: o.FullTrace, CrossTrace: o.CrossTrace,
		Logger: o.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("crawl: splitter: %w", err)
	}
	spRef.Store(sp)
	m.Split = sp
	m.gf = newGroupFlusher(sp, o.FlushInterval)
	o.Node.Splitter = splitAdapter{sp: sp, self: m.self, gf: m.gf}
	if m.Node, err = Open(o.Node); err != nil {
		m.gf.close()
		sp.Close()
		return nil, err
	}
	ref.n = m.Node
	m.ctl = o.Control
	m.Node.fence = m.fenceHeld
	fail := func(err error) (*Member, error) {
		m.Node.Close()
		m.gf.close()
		sp.Close()
		return nil, err
	}
	if err := m.saveSpoolMark(); err != nil {
		return fail(err)
	}
	if err := m.initElastic(o); err != nil {
		return fail(err)
	}
	if err := m.resumeElastic(context.Background()); err != nil {
		return fail(fmt.Errorf("crawl: resuming a membership change: %w", err))
	}
	m.serverTLS, m.services = serverTLS, o.Services
	for _, mm := range o.Members {
		if mm.ID == m.self {
			m.addr = mm.Addr
		}
	}
	m.markStop, m.markDone = make(chan struct{}), make(chan struct{})
	go m.markLoop()
	m.deadlineStop, m.deadlineDone = make(chan struct{}), make(chan struct{})
	go m.deadlineLoop(m.deadlineStop, m.deadlineDone)
	return m, nil
}

// Seed submits the seeds this member owns; others are left to their owner
// (every member is given the same seed list).
//
// A joining member seeds nothing: the hosts it will own are handed over to
// it with their queued URLs. Seeds are kept for a membership change that
// loses a member for good (its hosts are crawled again from their seeds).
func (m *Member) Seed(ctx context.Context, seeds []string) error {
	m.seeds = append(m.seeds, seeds...)
	if m.Phase() == PhaseJoining {
		return nil
	}
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
//
// During a membership change (elastic.go) Run stops the workers at PREPARE
// and starts them again at RESUME; a member the change removed stays
// stopped (Run returns when the remaining cluster terminates, or with ctx).
func (m *Member) Run(ctx context.Context) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for ctx.Err() == nil {
		if m.removedBehindBack() {
			m.Node.opts.Logf("crawl: %s was removed from the cluster while it ran: stopping", m.self)
			return nil
		}
		fetch, changed := m.shouldFetch()
		if held, _ := m.fenceHeld(); fetch && !held {
			// Fenced: wait for the control plane (or the phase) to change.
			select {
			case <-ctx.Done():
			case <-changed:
			case <-m.fenceChanged():
			case <-t.C:
			}
			continue
		}
		if fetch {
			done, err := m.runWorkers(ctx, changed, t)
			if err != nil || done {
				return err
			}
			continue
		}
		if m.Phase() != PhaseRemoved {
			select {
			case <-ctx.Done():
				return nil
			case <-changed:
			}
			continue
		}
		// Removed and the change done (RESUME): everything was handed
		// over, and the members refuse this id from now on (issue 25
		// defect 3), so there is no termination to wait for.
		if m.removedDone() {
			return nil
		}
		// Removed, the change not done yet: wait for the rest of the
		// cluster to terminate, still following phase changes while a
		// check hangs.
		if done := m.waitRemoved(ctx, changed, t); done {
			return nil
		}
	}
	return nil
}

// waitRemoved checks the cluster's termination each tick until it is proven
// (true), the phase changes or ctx ends.
func (m *Member) waitRemoved(ctx context.Context, changed <-chan struct{}, t *time.Ticker) bool {
	probe := newTermProbe(ctx, m.Split)
	defer probe.close()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-changed:
			return false
		case done := <-probe.result:
			probe.running = false
			if done {
				return true
			}
		case <-t.C:
			probe.start()
		}
	}
}

// termProbe runs the cluster's termination check (two status rounds over
// every member) in a goroutine it owns, one check at a time. A status call
// to an unreachable peer can hang for hostsplit's RPCTimeout (5 s, e.g. a
// black-holed peer): the loop that supervises the workers must not, or a
// pause, a failed worker or a stop would wait for it (issue 25, defect 5).
type termProbe struct {
	sp      *hostsplit.Splitter
	ctx     context.Context
	cancel  context.CancelFunc
	result  chan bool // capacity 1: the outcome of the check started last
	running bool      // a check is running; the caller clears it when it takes the result
	wg      sync.WaitGroup
}

func newTermProbe(ctx context.Context, sp *hostsplit.Splitter) *termProbe {
	p := &termProbe{sp: sp, result: make(chan bool, 1)}
	p.ctx, p.cancel = context.WithCancel(ctx)
	return p
}

// start begins a check unless one is running; its outcome arrives on
// result (true: terminated; false: not proven, e.g. a peer unreachable).
func (p *termProbe) start() {
	if p.running {
		return
	}
	p.running = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		done, err := p.sp.Terminated(p.ctx)
		p.result <- err == nil && done
	}()
}

// close cancels a running check and waits for it.
func (p *termProbe) close() {
	p.cancel()
	p.wg.Wait()
}

// runWorkers runs the node's workers until the cluster terminates (true),
// the membership phase changes, ctx ends or the node fails.
func (m *Member) runWorkers(ctx context.Context, changed <-chan struct{}, t *time.Ticker) (bool, error) {
	wctx, cancel := context.WithCancel(ctx)
	m.setRunning(true)
	var runErr error
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		runErr = m.Node.Run(wctx, false)
	}()
	probe := newTermProbe(wctx, m.Split)
	defer probe.close()
	stop := func() {
		cancel()
		<-exited
		m.setRunning(false)
	}
	fenceC := m.fenceChanged()
	for {
		select {
		case <-fenceC:
			fenceC = m.fenceChanged()
			if held, _ := m.fenceHeld(); !held {
				stop()
				return false, runErr
			}
			continue
		case done := <-probe.result:
			probe.running = false
			if done {
				stop()
				return true, runErr
			}
			continue
		case <-ctx.Done():
			stop()
			return false, runErr
		case <-exited:
			m.setRunning(false)
			cancel()
			return false, runErr
		case <-changed:
			stop()
			return false, runErr
		case <-t.C:
		}
		if held, _ := m.fenceHeld(); !held {
			stop()
			return false, runErr
		}
		if m.Node.fr.Idle() && m.Node.busy.Load() == 0 {
			if err := m.Node.Flush(); err != nil {
				stop()
				return false, errors.Join(runErr, fmt.Errorf("crawl: due flush: %w", err))
			}
		}
		probe.start() // a peer may be unreachable: the workers go on
	}
}

// Close runs the OnClose functions (stopping the caller's server) while it
// ends the peers' streams, then closes the splitter and the node. A second Close returns the first one's result.
func (m *Member) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *Member) close() error {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for _, f := range m.onClose {
			f()
		}
	}()
	// Peers keep their batch streams to this node open: end them, or a
	// graceful stop of the server always waits for its whole bound.
	m.Split.StopReceiving()
	<-stopped
	m.gf.close()
	close(m.markStop)
	<-m.markDone
	close(m.deadlineStop)
	<-m.deadlineDone
	err := m.Split.Close()
	if err == nil {
		// The spool at rest: its mark for the next open's check.
		var rep hostsplit.SpoolReport
		if rep, err = hostsplit.InspectSpool(filepath.Join(m.Node.opts.DataDir, spoolDir), hostsplit.Limits{}, false); err == nil && len(rep.Problems) == 0 {
			rep.Mark.Clean = true
			err = writeSpoolMark(m.Node.opts.DataDir, rep.Mark)
		}
	}
	return errors.Join(err, m.Node.Close())
}

// spoolMarkEvery is how often a running member refreshes its spool mark:
// after a kill -9, damage to the spool is seen unless it lost only the
// batches of the last interval.
var spoolMarkEvery = 2 * time.Second

// markLoop refreshes the spool mark until markStop is closed. Every value
// it reads is durable (the splitter syncs each write of a batch and its
// sequence number), so the mark is a lower bound of the spool at any kill.
func (m *Member) markLoop() {
	defer close(m.markDone)
	t := time.NewTicker(spoolMarkEvery)
	defer t.Stop()
	for {
		select {
		case <-m.markStop:
			return
		case <-t.C:
		}
		if err := m.saveSpoolMark(); err != nil {
			m.Node.opts.Logf("crawl: spool mark: %v", err)
		}
	}
}

// saveSpoolMark records the open spool's mark (see check.go).
func (m *Member) saveSpoolMark() error {
	mark, err := m.Split.Mark()
	if err != nil {
		return err
	}
	return writeSpoolMark(m.Node.opts.DataDir, mark)
}

// Addr is the member's gRPC address in MemberOptions.Members.
func (m *Member) Addr() string { return m.addr }

// ServerOptions are the options of the gRPC server the member must be
// served on: mTLS accepting only the cluster's current members (and
// operators, for the membership service), and the splitter's limits.
func (m *Member) ServerOptions() []grpc.ServerOption {
	return append(append(hostsplit.ServerOptions(hostsplit.Limits{}),
		grpc.Creds(credentials.NewTLS(m.serverTLS))), operatorGateOptions()...)
}

// Register registers the member's services on s: the splitter's Peer
// service, the membership service and MemberOptions.Services.
func (m *Member) Register(s grpc.ServiceRegistrar) {
	m.Split.Register(s)
	pb.RegisterMembershipServer(s, &membershipServer{m: m})
	if m.services != nil {
		m.services(s)
	}
}

// OnClose registers f to run when Close begins, concurrently with the end
// of the peers' streams to this member: the place to stop the gRPC server
// serving it (gracefully, with a bound), before the splitter and the node
// close. Call it before Close.
func (m *Member) OnClose(f func()) { m.onClose = append(m.onClose, f) }
