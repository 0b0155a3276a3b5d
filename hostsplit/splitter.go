package hostsplit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sextant-crawler/sextant/internal/fingerprint"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/keepalive"
)

// ErrClosed is returned by calls on a closed Splitter.
var ErrClosed = errors.New("hostsplit: closed")

// Splitter routes URLs to their owners and receives the URLs peers send.
// It is safe for concurrent use and must be Closed.
type Splitter struct {
	opts   Options
	store  *store
	health *health.Server

	view      atomic.Pointer[viewState] // replaced under routeMu (write) and peersMu
	expect    atomic.Pointer[View]      // a view being changed to (Expect)
	setViewMu sync.Mutex                // serialises SetView

	peersMu sync.RWMutex
	peers   map[NodeID]*peer // every node known: current and previous members
	order   []*peer          // the current members but Self, in membership order

	handoffBatches, handoffBytes atomic.Uint64

	routing         atomic.Int64 // Route calls in progress
	routeMu         sync.RWMutex // read-held by Route; Close takes it to drain them
	routeClosed     bool
	discoveredLocal atomic.Uint64
	rejectedAuth    atomic.Uint64
	rejectedUnknown atomic.Uint64 // malformed batches from unidentified senders

	storeMu     sync.RWMutex // read-held while using the store outside the senders
	storeClosed bool

	recvStopOnce sync.Once
	recvStop     chan struct{} // closed by StopReceiving

	closeOnce sync.Once
	closing   chan struct{}
	stopSend  context.CancelFunc
	sendCtx   context.Context
	wg        sync.WaitGroup
	closeErr  error
}

// peer is the splitter's state about one other member.
type peer struct {
	id   NodeID
	conn *grpc.ClientConn // nil: no sender (a former member)

	stop    chan struct{} // closed to stop the sender (member left)
	stopped chan struct{} // closed when the sender has returned

	mu       sync.Mutex // guards cache, buf, bufBytes, bufStart, flushing
	cache    Cache
	buf      []string
	bufBytes int
	bufStart time.Time
	flushing int // URLs taken from buf, not yet spooled

	flushMu sync.Mutex // orders sequence assignment and spool writes

	outMu       sync.Mutex // guards lastSeq, acked, pending, spooledAt
	lastSeq     uint64
	acked       uint64
	pending     map[uint64]int       // spooled seq → URL count
	spooledAt   map[uint64]time.Time // when this process spooled seq (for coalescing)
	pendingURLs int

	// wireHigh is the highest seq counted in the wire counters: batches
	// spooled before this start, and resends, are not counted again.
	// Used by the sender goroutine only.
	wireHigh uint64

	notify chan struct{} // capacity 1: new batch spooled

	inMu      sync.Mutex // serialises applying batches from this peer
	inStateMu sync.Mutex // guards inEpoch, inApplied (written under inMu too)
	inEpoch   uint64
	inApplied uint64

	st     peerCounters
	health peerHealth
}

type peerCounters struct {
	discovered, suppressed, tooLong, batchDups     atomic.Uint64
	sentURLs, sentBatches, wireBytes, rawBytes     atomic.Uint64
	spooledBytes, wireMessages                     atomic.Uint64
	ackedBatches, transmitted, streamErrors        atomic.Uint64
	recvBatches, recvURLs, dupBatches              atomic.Uint64
	malformed, rejectedByPeer, rerouted, forwarded atomic.Uint64
}

// New opens the spool in opts.DataDir, dials the peers lazily and starts one
// sender goroutine per peer, which resumes sending whatever the spool holds.
// The membership view is Options.Epoch and Members on the first start; the
// view is persisted, and a later start acts on the persisted one (with the
// addresses Options gives for its members) unless Options.Epoch is newer.
// Joining is ignored once a view is persisted.
func New(opts Options) (*Splitter, error) {
	opts.Members = slices.Clone(opts.Members)
	opts.DialOptions = slices.Clone(opts.DialOptions)
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	st, err := openStore(opts.DataDir, opts.Logger)
	if err != nil {
		return nil, err
	}
	vs := &viewState{v: View{Epoch: opts.Epoch, Members: opts.Members}}
	if vs.v.Epoch == 0 && !opts.Joining {
		vs.v.Epoch = 1
	}
	saved, ok, err := st.loadView()
	if err != nil {
		st.close()
		return nil, err
	}
	if ok && saved.Epoch >= vs.v.Epoch {
		given := View{Members: opts.Members}
		vs = &viewState{v: View{Epoch: saved.Epoch, Members: saved.Members}, prev: saved.Prev, removed: saved.Removed}
		for i, m := range vs.v.Members {
			if a, ok := given.Addr(m.ID); ok && a != "" {
				vs.v.Members[i].Addr = a
			}
		}
		if saved.Epoch > opts.Epoch {
			opts.Logger.Info("hostsplit: resuming the membership view adopted earlier", "epoch", saved.Epoch, "members", vs.v.IDs())
		}
	}
	if vs.ring, err = NewRing(vs.v.IDs(), opts.ByDomain); err != nil {
		st.close()
		return nil, err
	}
	// Persist the first view, so that a restart with a changed member
	// list (a config edited to add a node) keeps acting on this one until
	// a membership change says otherwise.
	if !ok && vs.v.Epoch > 0 {
		if err := st.saveView(vs); err != nil {
			st.close()
			return nil, err
		}
	}
	s := &Splitter{opts: opts, store: st, peers: map[NodeID]*peer{}, closing: make(chan struct{}), recvStop: make(chan struct{})}
	s.view.Store(vs)
	s.sendCtx, s.stopSend = context.WithCancel(context.Background())
	s.health = health.NewServer()
	fail := func(err error) (*Splitter, error) {
		s.closeConns()
		st.close()
		return nil, err
	}
	for _, m := range vs.v.Members {
		if m.ID == opts.Self {
			continue
		}
		p, err := s.newPeer(m.ID)
		if err == nil {
			err = s.dial(p, m.Addr)
		}
		if err != nil {
			return fail(err)
		}
		s.peers[m.ID] = p
		s.order = append(s.order, p)
	}
	for _, id := range vs.prev {
		if id == opts.Self || s.peers[id] != nil {
			continue
		}
		p, err := s.newPeer(id)
		if err != nil {
			return fail(err)
		}
		s.peers[id] = p
	}
	for _, p := range s.order {
		s.startSender(p)
	}
	if opts.BatchMaxAge > 0 {
		s.wg.Add(1)
		go s.ageLoop()
	}
	return s, nil
}

// newPeer loads the persisted state about id; it has no sender until dial
// and startSender.
func (s *Splitter) newPeer(id NodeID) (*peer, error) {
	p := &peer{id: id, notify: make(chan struct{}, 1)}
	if s.opts.PeerCache != nil {
		p.cache = s.opts.PeerCache()
	}
	last, pending, err := s.store.peerState(id)
	if err != nil {
		return nil, err
	}
	p.lastSeq, p.pending, p.spooledAt = last, pending, map[uint64]time.Time{}
	p.wireHigh = last
	p.acked = last
	for seq, n := range pending {
		p.acked = min(p.acked, seq-1)
		p.pendingURLs += n
	}
	if p.inEpoch, p.inApplied, err = s.store.applied(id); err != nil {
		return nil, err
	}
	return p, nil
}

// dial makes p's client connection (connecting lazily).
func (s *Splitter) dial(p *peer, addr string) error {
	creds := insecure.NewCredentials()
	if s.opts.ClientTLS != nil {
		cfg := s.opts.ClientTLS.Clone()
		cfg.ServerName = string(p.id)
		creds = credentials.NewTLS(cfg)
	}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: KeepaliveTime / 2}),
		// Reconnect within RetryMax of a healed partition or a restarted
		// peer (gRPC's default backoff grows to 2 minutes).
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: 5 * time.Second,
			Backoff: backoff.Config{BaseDelay: s.opts.RetryMin, Multiplier: 1.6, Jitter: 0.2, MaxDelay: s.opts.RetryMax}}),
	}, s.opts.DialOptions...)
	conn, err := grpc.NewClient(addr, dial...)
	if err != nil {
		return fmt.Errorf("hostsplit: peer %s: %w", p.id, err)
	}
	p.conn = conn
	return nil
}

func (s *Splitter) startSender(p *peer) {
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	s.wg.Add(1)
	go s.sendLoop(p)
}

// stopSender stops p's sender and closes its connection; p keeps its
// state (a former member may still send to this node).
func (s *Splitter) stopSender(p *peer) {
	if p.stop == nil {
		return
	}
	close(p.stop)
	<-p.stopped
	p.stop, p.stopped = nil, nil
	s.peersMu.Lock()
	if p.conn != nil {
		_ = p.conn.Close()
		p.conn = nil
	}
	s.peersMu.Unlock()
}

// currentPeers returns the current members but Self, in order.
func (s *Splitter) currentPeers() []*peer {
	s.peersMu.RLock()
	defer s.peersMu.RUnlock()
	return slices.Clone(s.order)
}

// allPeers returns every known peer: current members in order, then
// former members by id.
func (s *Splitter) allPeers() []*peer {
	s.peersMu.RLock()
	defer s.peersMu.RUnlock()
	out := slices.Clone(s.order)
	for _, id := range slices.Sorted(maps.Keys(s.peers)) {
		if p := s.peers[id]; !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func (s *Splitter) peerByID(id NodeID) (*peer, bool) {
	s.peersMu.RLock()
	defer s.peersMu.RUnlock()
	p, ok := s.peers[id]
	return p, ok
}

// Ring returns the ownership ring over the membership.
// It changes with SetView.
func (s *Splitter) Ring() *Ring { return s.view.Load().ring }

// Owner returns the member that owns host under the current view.
func (s *Splitter) Owner(host string) NodeID { return s.view.Load().ring.Owner(host) }

// Route hands normalised absolute URLs to their owners: local URLs go to the
// Local sink before Route returns; remote URLs that miss the peer's cache
// join the peer's batch buffer, which is spooled durably when it is full,
// when it is BatchMaxAge old, or on Flush. URLs without a host are owned
// locally (the sink's filter decides). A caller that must not lose remote
// URLs across a crash calls Flush before recording their page as done.
func (s *Splitter) Route(ctx context.Context, urls []string) error {
	s.routeMu.RLock()
	defer s.routeMu.RUnlock()
	if s.routeClosed {
		return ErrClosed
	}
	s.routing.Add(1)
	defer s.routing.Add(-1)
	vs := s.view.Load()
	var local []string
	var full []*peer
	for _, u := range urls {
		fp := fingerprint.URL(withoutFragment(u))
		if s.opts.FullTrace != nil {
			s.opts.FullTrace(fp)
		}
		owner := s.opts.Self
		if h, ok := Host(u); ok {
			owner = vs.ring.Owner(h)
		}
		if owner == s.opts.Self {
			local = append(local, u)
			continue
		}
		if s.opts.CrossTrace != nil {
			s.opts.CrossTrace(fp)
		}
		p, _ := s.peerByID(owner)
		if s.add(p, u, fp) && !slices.Contains(full, p) {
			full = append(full, p)
		}
	}
	s.discoveredLocal.Add(uint64(len(local)))
	var errs []error
	if len(local) > 0 {
		if err := s.opts.Local.Deliver(ctx, local); err != nil {
			errs = append(errs, fmt.Errorf("hostsplit: local deliver: %w", err))
		}
	}
	for _, p := range full {
		errs = append(errs, s.flushPeer(p, false))
	}
	return errors.Join(errs...)
}

// withoutFragment is u up to its first '#'. A canonical URL has none: a
// fragment is the caller's annotation (how the URL was reached), carried
// with the URL but no part of its identity, so that the peer cache
// suppresses a URL however it was reached.
func withoutFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

// add puts u in p's buffer unless p's cache has seen it, and reports whether
// the buffer is full.
func (s *Splitter) add(p *peer, u string, fp uint64) bool {
	p.st.discovered.Add(1)
	if len(u) > s.opts.Limits.MaxURLLen {
		p.st.tooLong.Add(1)
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cache != nil && p.cache.Seen(fp) {
		p.st.suppressed.Add(1)
		return false
	}
	if len(p.buf) == 0 {
		p.bufStart = s.opts.Clock.Now()
	}
	p.buf = append(p.buf, u)
	p.bufBytes += len(u)
	return len(p.buf) >= s.opts.BatchMaxURLs || p.bufBytes >= s.opts.BatchMaxBytes
}

// flushPeer spools p's buffer as batches: all of it, or with !all only
// full batches.
func (s *Splitter) flushPeer(p *peer, all bool) error {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	for {
		p.mu.Lock()
		if !all && len(p.buf) < s.opts.BatchMaxURLs && p.bufBytes < s.opts.BatchMaxBytes {
			p.mu.Unlock()
			return nil
		}
		n, size := 0, 0
		for n < len(p.buf) && n < s.opts.BatchMaxURLs && size+len(p.buf[n]) <= s.opts.BatchMaxBytes {
			size += len(p.buf[n])
			n++
		}
		n = max(n, min(1, len(p.buf)))
		urls := slices.Clone(p.buf[:n])
		p.buf = slices.Delete(p.buf, 0, n)
		p.bufBytes -= totalLen(urls)
		p.flushing += len(urls)
		if len(p.buf) > 0 {
			p.bufStart = s.opts.Clock.Now()
		}
		p.mu.Unlock()
		if len(urls) == 0 {
			return nil
		}
		err := s.spool(p, urls)
		p.mu.Lock()
		p.flushing -= len(urls)
		if err != nil {
			// Keep the URLs: the next flush tries again.
			p.buf = append(urls, p.buf...)
			p.bufBytes += totalLen(urls)
		}
		p.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

func totalLen(urls []string) int {
	n := 0
	for _, u := range urls {
		n += len(u)
	}
	return n
}

// spool encodes urls as the next batch for p and writes it to the spool.
// The caller holds p.flushMu.
func (s *Splitter) spool(p *peer, urls []string) error {
	slices.Sort(urls)
	uniq := slices.Compact(urls)
	enc, err := EncodeBatch(nil, uniq, s.opts.Codec)
	if err != nil {
		return err
	}
	p.outMu.Lock()
	seq := p.lastSeq + 1
	p.outMu.Unlock()
	s.storeMu.RLock()
	if s.storeClosed {
		s.storeMu.RUnlock()
		return ErrClosed
	}
	err = s.store.putBatch(p.id, seq, KindURLs, len(uniq), enc)
	s.storeMu.RUnlock()
	if err != nil {
		return err
	}
	p.outMu.Lock()
	p.lastSeq = seq
	p.pending[seq] = len(uniq)
	p.spooledAt[seq] = s.opts.Clock.Now()
	p.pendingURLs += len(uniq)
	p.outMu.Unlock()
	p.st.batchDups.Add(uint64(len(urls) - len(uniq)))
	p.st.sentURLs.Add(uint64(len(uniq)))
	p.st.sentBatches.Add(1)
	p.st.spooledBytes.Add(uint64(len(enc)))
	p.st.rawBytes.Add(uint64(totalLen(uniq)))
	select {
	case p.notify <- struct{}{}:
	default:
	}
	return nil
}

// Flush spools every non-empty batch buffer. When it returns nil, every URL
// given to Route before the call is durable on this node.
func (s *Splitter) Flush(ctx context.Context) error {
	var errs []error
	for _, p := range s.currentPeers() {
		if err := ctx.Err(); err != nil {
			return err
		}
		errs = append(errs, s.flushPeer(p, true))
	}
	return errors.Join(errs...)
}

// ageLoop spools buffers older than BatchMaxAge.
func (s *Splitter) ageLoop() {
	defer s.wg.Done()
	tick := s.opts.BatchMaxAge / 4
	for {
		select {
		case <-s.closing:
			return
		case <-s.opts.Clock.After(tick):
		}
		s.flushAged(s.opts.Clock.Now())
	}
}

// flushAged spools every buffer whose oldest URL is BatchMaxAge old at now.
func (s *Splitter) flushAged(now time.Time) {
	for _, p := range s.currentPeers() {
		p.mu.Lock()
		old := len(p.buf) > 0 && now.Sub(p.bufStart) >= s.opts.BatchMaxAge
		p.mu.Unlock()
		if old {
			if err := s.flushPeer(p, true); err != nil {
				s.opts.Logger.Error("hostsplit: spooling batch", "peer", p.id, "err", err)
			}
		}
	}
}

func (s *Splitter) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// Close spools the batch buffers, stops the senders (unacknowledged batches
// stay in the spool for the next start), marks the health service not
// serving, and closes the spool. The caller stops its gRPC server first or
// after; batches arriving after Close are refused.
func (s *Splitter) Close() error {
	s.closeOnce.Do(func() {
		s.health.Shutdown()
		s.StopReceiving()
		// Refuse new Route calls and wait for running ones, so that the
		// flush below spools every URL Route accepted.
		s.routeMu.Lock()
		s.routeClosed = true
		s.routeMu.Unlock()
		flushErr := s.Flush(context.Background())
		close(s.closing)
		s.stopSend()
		s.wg.Wait()
		// Wait for receivers and Route calls using the store.
		s.storeMu.Lock()
		s.storeClosed = true
		s.storeMu.Unlock()
		s.closeConns()
		s.closeErr = errors.Join(flushErr, s.store.close())
	})
	return s.closeErr
}

func (s *Splitter) closeConns() {
	s.peersMu.Lock()
	defer s.peersMu.Unlock()
	for _, p := range s.peers {
		if p.conn != nil {
			_ = p.conn.Close()
		}
	}
}

// peerIDs returns the peer ids in a stable order.
func (s *Splitter) peerIDs() []NodeID {
	s.peersMu.RLock()
	defer s.peersMu.RUnlock()
	return slices.Sorted(maps.Keys(s.peers))
}
