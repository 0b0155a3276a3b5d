package hostsplit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sextant-crawler/sextant/internal/fingerprint"
	"google.golang.org/grpc"
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
	ring   *Ring
	store  *store
	peers  map[NodeID]*peer
	order  []*peer // peers in membership order
	health *health.Server

	routing         atomic.Int64 // Route calls in progress
	routeMu         sync.RWMutex // read-held by Route; Close takes it to drain them
	routeClosed     bool
	discoveredLocal atomic.Uint64
	rejectedAuth    atomic.Uint64
	rejectedUnknown atomic.Uint64 // malformed batches from unidentified senders

	storeMu     sync.RWMutex // read-held while using the store outside the senders
	storeClosed bool

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
	conn *grpc.ClientConn

	mu       sync.Mutex // guards cache, buf, bufBytes, bufStart, flushing
	cache    Cache
	buf      []string
	bufBytes int
	bufStart time.Time
	flushing int // URLs taken from buf, not yet spooled

	flushMu sync.Mutex // orders sequence assignment and spool writes

	outMu       sync.Mutex // guards lastSeq, acked, pending
	lastSeq     uint64
	acked       uint64
	pending     map[uint64]int // spooled seq → URL count
	pendingURLs int

	notify chan struct{} // capacity 1: new batch spooled

	inMu      sync.Mutex // serialises applying batches from this peer
	inStateMu sync.Mutex // guards inEpoch, inApplied (written under inMu too)
	inEpoch   uint64
	inApplied uint64

	st peerCounters
}

type peerCounters struct {
	discovered, suppressed, tooLong, batchDups atomic.Uint64
	sentURLs, sentBatches, wireBytes, rawBytes atomic.Uint64
	ackedBatches, transmitted, streamErrors    atomic.Uint64
	recvBatches, recvURLs, dupBatches          atomic.Uint64
	malformed, rejectedByPeer                  atomic.Uint64
}

// New opens the spool in opts.DataDir, dials the peers lazily and starts one
// sender goroutine per peer, which resumes sending whatever the spool holds.
func New(opts Options) (*Splitter, error) {
	opts.Members = slices.Clone(opts.Members)
	opts.DialOptions = slices.Clone(opts.DialOptions)
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ids := make([]NodeID, len(opts.Members))
	for i, m := range opts.Members {
		ids[i] = m.ID
	}
	ring, err := NewRing(ids, opts.ByDomain)
	if err != nil {
		return nil, err
	}
	st, err := openStore(opts.DataDir, opts.Logger)
	if err != nil {
		return nil, err
	}
	s := &Splitter{opts: opts, ring: ring, store: st, peers: map[NodeID]*peer{}, closing: make(chan struct{})}
	s.sendCtx, s.stopSend = context.WithCancel(context.Background())
	s.health = health.NewServer()
	for _, m := range opts.Members {
		if m.ID == opts.Self {
			continue
		}
		p, err := s.newPeer(m)
		if err != nil {
			s.closeConns()
			st.close()
			return nil, err
		}
		s.peers[m.ID] = p
		s.order = append(s.order, p)
	}
	for _, p := range s.order {
		s.wg.Add(1)
		go s.sendLoop(p)
	}
	if opts.BatchMaxAge > 0 {
		s.wg.Add(1)
		go s.ageLoop()
	}
	return s, nil
}

func (s *Splitter) newPeer(m Member) (*peer, error) {
	p := &peer{id: m.ID, notify: make(chan struct{}, 1)}
	if s.opts.PeerCache != nil {
		p.cache = s.opts.PeerCache()
	}
	last, pending, err := s.store.peerState(m.ID)
	if err != nil {
		return nil, err
	}
	p.lastSeq, p.pending = last, pending
	p.acked = last
	for seq, n := range pending {
		p.acked = min(p.acked, seq-1)
		p.pendingURLs += n
	}
	if p.inEpoch, p.inApplied, err = s.store.applied(m.ID); err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if s.opts.ClientTLS != nil {
		cfg := s.opts.ClientTLS.Clone()
		cfg.ServerName = string(m.ID)
		creds = credentials.NewTLS(cfg)
	}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: KeepaliveTime / 2}),
	}, s.opts.DialOptions...)
	if p.conn, err = grpc.NewClient(m.Addr, dial...); err != nil {
		return nil, fmt.Errorf("hostsplit: peer %s: %w", m.ID, err)
	}
	return p, nil
}

// Ring returns the ownership ring over the membership.
func (s *Splitter) Ring() *Ring { return s.ring }

// Owner returns the member that owns host.
func (s *Splitter) Owner(host string) NodeID { return s.ring.Owner(host) }

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
	var local []string
	var full []*peer
	for _, u := range urls {
		fp := fingerprint.URL(u)
		if s.opts.FullTrace != nil {
			s.opts.FullTrace(fp)
		}
		owner := s.opts.Self
		if h, ok := Host(u); ok {
			owner = s.ring.Owner(h)
		}
		if owner == s.opts.Self {
			local = append(local, u)
			continue
		}
		if s.opts.CrossTrace != nil {
			s.opts.CrossTrace(fp)
		}
		p := s.peers[owner]
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
	err = s.store.putBatch(p.id, seq, len(uniq), enc)
	s.storeMu.RUnlock()
	if err != nil {
		return err
	}
	p.outMu.Lock()
	p.lastSeq = seq
	p.pending[seq] = len(uniq)
	p.pendingURLs += len(uniq)
	p.outMu.Unlock()
	p.st.batchDups.Add(uint64(len(urls) - len(uniq)))
	p.st.sentURLs.Add(uint64(len(uniq)))
	p.st.sentBatches.Add(1)
	p.st.wireBytes.Add(uint64(len(enc)))
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
	for _, p := range s.order {
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
	for _, p := range s.order {
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
	for _, p := range s.peers {
		if p.conn != nil {
			_ = p.conn.Close()
		}
	}
}

// peerIDs returns the peer ids in a stable order.
func (s *Splitter) peerIDs() []NodeID { return slices.Sorted(maps.Keys(s.peers)) }
