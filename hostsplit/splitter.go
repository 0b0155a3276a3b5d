package hostsplit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// ErrClosed is returned by calls on a closed Splitter.
var ErrClosed = errors.New("hostsplit: closed")

// Splitter routes URLs to their owners: it composes the ownership ring
// (Ownership), the durable per-peer queues (Spool) and the Transport, and
// owns what joins them: the per-peer front caches and batch buffers of
// Route, and membership changes. It is safe for concurrent use and must be
// Closed.
type Splitter struct {
	opts  Options
	own   *Ownership
	spool *Spool
	tr    *Transport
	rs    *resender // serves the peers' resend tokens (resend.go)
	// rsCancel ends the resender's context (Close)
	rsCancel context.CancelFunc

	routing         atomic.Int64 // Route calls in progress
	routeMu         sync.RWMutex // read-held by Route and receivers; Close and SetView take it
	routeClosed     bool
	discoveredLocal atomic.Uint64

	closeOnce sync.Once
	closing   chan struct{} // closed to stop ageLoop
	wg        sync.WaitGroup
	closeErr  error
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
	vs, err := initialView(&opts, st)
	if err != nil {
		st.close()
		return nil, err
	}
	s := &Splitter{opts: opts, closing: make(chan struct{})}
	s.spool = &Spool{opts: &s.opts, st: st}
	s.own = newOwnership(opts.Self, vs, st.saveView)
	if s.tr, err = newTransport(&s.opts, s.own, s.spool, s); err != nil {
		st.close()
		return nil, err
	}
	if s.rs, err = newResender(s); err != nil {
		s.tr.closeConns()
		st.close()
		return nil, err
	}
	s.tr.startSenders()
	var rctx context.Context
	rctx, s.rsCancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.rs.loop(rctx)
	if opts.BatchMaxAge > 0 {
		s.wg.Add(1)
		go s.ageLoop()
	}
	return s, nil
}

// initialView returns the view to start on: the one persisted in st if it
// is not older than opts.Epoch (with the addresses opts gives), else the
// one opts gives, persisted if none was.
func initialView(opts *Options, st *store) (*viewState, error) {
	vs := &viewState{v: View{Epoch: opts.Epoch, Members: opts.Members}}
	if vs.v.Epoch == 0 && !opts.Joining {
		vs.v.Epoch = 1
	}
	saved, ok, err := st.loadView()
	if err != nil {
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
		return nil, err
	}
	// Persist the first view, so that a restart with a changed member
	// list (a config edited to add a node) keeps acting on this one until
	// a membership change says otherwise.
	if !ok && vs.v.Epoch > 0 {
		if err := st.saveView(vs); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// Ownership returns the ownership ring: the view, the owner of a host, the
// retired ids.
func (s *Splitter) Ownership() *Ownership { return s.own }

// Spool returns the durable per-peer queues, their archive and metadata.
func (s *Splitter) Spool() *Spool { return s.spool }

// Transport returns the gRPC side: Register, StopReceiving, status and
// termination detection.
func (s *Splitter) Transport() *Transport { return s.tr }

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
	vs := s.own.state()
	var local []string
	var full []*peer
	for _, u := range urls {
		fp := fingerprint.URL(withoutFragment(u))
		if s.opts.FullTrace != nil {
			s.opts.FullTrace(fp)
		}
		owner := vs.ownerOf(u, s.opts.Self)
		if owner == s.opts.Self {
			local = append(local, u)
			continue
		}
		if s.opts.CrossTrace != nil {
			s.opts.CrossTrace(fp)
		}
		p, _ := s.tr.peerByID(owner)
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
	b := &p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cache != nil && b.cache.Seen(fp) {
		p.st.suppressed.Add(1)
		return false
	}
	if len(b.buf) == 0 {
		b.bufStart = s.opts.Clock.Now()
	}
	b.buf = append(b.buf, u)
	b.bufBytes += len(u)
	return len(b.buf) >= s.opts.BatchMaxURLs || b.bufBytes >= s.opts.BatchMaxBytes
}

// flushPeer spools p's buffer as batches: all of it, or with !all only
// full batches.
func (s *Splitter) flushPeer(p *peer, all bool) error {
	p.q.flushMu.Lock()
	defer p.q.flushMu.Unlock()
	b := &p.b
	for {
		b.mu.Lock()
		if !all && len(b.buf) < s.opts.BatchMaxURLs && b.bufBytes < s.opts.BatchMaxBytes {
			b.mu.Unlock()
			return nil
		}
		n, size := 0, 0
		for n < len(b.buf) && n < s.opts.BatchMaxURLs && size+len(b.buf[n]) <= s.opts.BatchMaxBytes {
			size += len(b.buf[n])
			n++
		}
		n = max(n, min(1, len(b.buf)))
		urls := slices.Clone(b.buf[:n])
		b.buf = slices.Delete(b.buf, 0, n)
		b.bufBytes -= totalLen(urls)
		b.flushing += len(urls)
		if len(b.buf) > 0 {
			b.bufStart = s.opts.Clock.Now()
		}
		b.mu.Unlock()
		if len(urls) == 0 {
			return nil
		}
		err := s.spool.append(p, urls)
		b.mu.Lock()
		b.flushing -= len(urls)
		if err != nil {
			// Keep the URLs: the next flush tries again.
			b.buf = append(urls, b.buf...)
			b.bufBytes += totalLen(urls)
		}
		b.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// Flush spools every non-empty batch buffer, the batches of all peers in
// one synced write: workers wait for a group flush every FlushInterval, so
// one fsync per peer per round was most of the spool's cost. When it
// returns nil, every URL given to Route before the call is durable on this
// node.
func (s *Splitter) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	peers := s.tr.currentPeers()
	// The order appendMany's other callers (spoolMany) lock in.
	slices.SortFunc(peers, func(a, b *peer) int { return strings.Compare(string(a.id), string(b.id)) })
	for _, p := range peers {
		p.q.flushMu.Lock()
	}
	defer func() {
		for _, p := range peers {
			p.q.flushMu.Unlock()
		}
	}()
	var with []*peer
	var urls [][]string
	for _, p := range peers {
		b := &p.b
		b.mu.Lock()
		if len(b.buf) > 0 {
			with, urls = append(with, p), append(urls, b.buf)
			b.flushing += len(b.buf)
			b.buf, b.bufBytes = nil, 0
		}
		b.mu.Unlock()
	}
	if len(with) == 0 {
		return nil
	}
	err := s.spool.appendManyLocked(with, urls, KindURLs, nil, nil)
	for i, p := range with {
		b := &p.b
		b.mu.Lock()
		b.flushing -= len(urls[i])
		if err != nil {
			// Keep the URLs: the next flush tries again.
			b.buf = append(urls[i], b.buf...)
			b.bufBytes += totalLen(urls[i])
		}
		if len(b.buf) > 0 {
			b.bufStart = s.opts.Clock.Now()
		}
		b.mu.Unlock()
	}
	return err
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
	for _, p := range s.tr.currentPeers() {
		p.b.mu.Lock()
		old := len(p.b.buf) > 0 && now.Sub(p.b.bufStart) >= s.opts.BatchMaxAge
		p.b.mu.Unlock()
		if old {
			if err := s.flushPeer(p, true); err != nil {
				s.opts.Logger.Error("hostsplit: spooling batch", "peer", p.id, "err", err)
			}
		}
	}
}

// Close spools the batch buffers, stops the senders (unacknowledged batches
// stay in the spool for the next start), marks the health service not
// serving, and closes the spool. The caller stops its gRPC server first or
// after; batches arriving after Close are refused.
func (s *Splitter) Close() error {
	s.closeOnce.Do(func() {
		s.tr.health.Shutdown()
		s.tr.StopReceiving()
		// Refuse new Route calls and wait for running ones, so that the
		// flush below spools every URL Route accepted.
		s.routeMu.Lock()
		s.routeClosed = true
		s.routeMu.Unlock()
		flushErr := s.Flush(context.Background())
		close(s.closing)
		s.rsCancel()
		s.tr.stop()
		s.wg.Wait()
		// Wait for receivers and Route calls using the store.
		err := s.spool.close()
		s.tr.closeConns()
		s.closeErr = errors.Join(flushErr, err)
	})
	return s.closeErr
}

// underView implements node for the Transport.
func (s *Splitter) underView(fn func(vs *viewState) error) error {
	s.routeMu.RLock()
	defer s.routeMu.RUnlock()
	if s.routeClosed {
		return ErrClosed
	}
	return fn(s.own.state())
}

// resendAsked implements node for the Transport.
func (s *Splitter) resendAsked(id NodeID, token uint64) { s.rs.asked(id, token) }

// resendStatus implements node for the Transport.
func (s *Splitter) resendStatus() (uint64, map[NodeID]uint64, bool) { return s.rs.status() }

// routeStatus implements node for the Transport. Routing is read first:
// a Route call that ends in between shows up in the counters.
func (s *Splitter) routeStatus() (int64, Stats) {
	routing := s.routing.Load()
	return routing, s.Stats()
}
