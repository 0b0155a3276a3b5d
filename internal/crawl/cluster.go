package crawl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/hostsplit"
	pb "github.com/sextant-crawler/sextant/proto"
)

// Member is a running cluster node. Start it, Run it, Close it.
type Member struct {
	Node  *Node
	Split *hostsplit.Splitter
	gf    *groupFlusher
	self  hostsplit.NodeID
	addr  string // MemberOptions.Listener's address, else Self's in Members

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

// Test seams (nil but in tests, set before any Member runs): Run calls
// testHookBeforeWorkers once it decided to run the workers, before it
// starts them; runWorkers calls testHookWorkersStarted once they run,
// before it watches for a phase change.
var testHookBeforeWorkers, testHookWorkersStarted func(m *Member)

// sinkRef lets the splitter deliver to the node opened after it.
type sinkRef struct{ n *Node }

func (s *sinkRef) Deliver(ctx context.Context, urls []string) error { return s.n.Deliver(ctx, urls) }

// splitAdapter is the Node's view of the splitter.
type splitAdapter struct {
	sp   *hostsplit.Splitter
	self hostsplit.NodeID
	gf   *groupFlusher
}

func (a splitAdapter) IsLocal(host string) bool { return a.sp.Ownership().Owner(host) == a.self }

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
			return sp.Ownership().Known(id)
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
	m.Node.claim, m.Node.unclaim = m.claimFetch, m.endClaim
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
	if o.Listener != nil {
		m.addr = o.Listener.Addr().String() // the address actually served
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
		if owner, err := m.Split.Ownership().Ring().OwnerOfURL(s); err != nil || owner == m.self {
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
			m.Node.opts.Logger.Warn("crawl: this node was removed from the cluster while it ran: stopping", "node", m.self)
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
			if testHookBeforeWorkers != nil {
				testHookBeforeWorkers(m)
			}
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
	if testHookWorkersStarted != nil {
		testHookWorkersStarted(m)
	}
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
		// A busy node fails the check by its own status, so asking every
		// member twice (2(N−1) status calls a tick) would be wasted CPU on
		// both ends; Idle is what that status reports. A peer may be
		// unreachable: the probe runs apart, the workers go on.
		if m.Node.Idle() {
			probe.start()
		}
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
	m.Split.Transport().StopReceiving()
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
			m.Node.opts.Logger.Warn("crawl: spool mark failed", "err", err)
		}
	}
}

// saveSpoolMark records the open spool's mark (see check.go).
func (m *Member) saveSpoolMark() error {
	mark, err := m.Split.Spool().Mark()
	if err != nil {
		return err
	}
	return writeSpoolMark(m.Node.opts.DataDir, mark)
}

// Addr is the member's gRPC address: MemberOptions.Listener's if set, else
// Self's in MemberOptions.Members.
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
	m.Split.Transport().Register(s)
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
