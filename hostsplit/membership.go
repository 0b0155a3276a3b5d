package hostsplit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// The Splitter's part of membership changes: adopting a view and moving
// the URLs spooled or archived for members that left.

// SetView adopts a newer membership view: URLs are routed by its ring from
// now on, senders start for new members, and every batch spooled for a
// member that left is re-routed (its URLs go to their new owners, or to the
// Local sink) before SetView returns. The view is persisted: a restarted
// Splitter resumes it whatever its Options say (addresses excepted). A view
// with the current epoch and members is a no-op; an older one is
// ErrStaleView. Moving queued work between nodes is the caller's job
// (SpoolHandoff).
func (s *Splitter) SetView(ctx context.Context, v View) error {
	v.Members = slices.Clone(v.Members)
	if err := v.validate(s.opts.Self); err != nil {
		return err
	}
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	nvs, err := s.own.state().next(v, s.opts.ByDomain)
	if err != nil || nvs == nil {
		return err
	}
	// Stop Route calls and receivers' forwarding: both read the view
	// under routeMu.
	s.routeMu.Lock()
	defer s.routeMu.Unlock()
	if s.routeClosed {
		return ErrClosed
	}
	// Spool the buffers built for the old view; the batches of members
	// that leave are re-routed below.
	var errs []error
	for _, p := range s.tr.currentPeers() {
		errs = append(errs, s.flushPeer(p, true))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := s.spool.st.saveView(nvs); err != nil {
		return err
	}
	gone, err := s.tr.adopt(nvs)
	if err != nil {
		return err
	}
	for _, p := range gone {
		s.tr.stopSender(p)
		if err := s.reroute(ctx, p, nvs); err != nil {
			return err
		}
	}
	return nil
}

// RerouteOrphans re-routes the batches spooled for nodes that are not
// members of the current view (left after a crash in SetView). Call it
// once the Local sink is ready.
func (s *Splitter) RerouteOrphans(ctx context.Context) error {
	s.routeMu.RLock()
	defer s.routeMu.RUnlock()
	vs := s.own.state()
	for _, p := range s.tr.allPeers() {
		if vs.v.Has(p.id) {
			continue
		}
		p.q.mu.Lock()
		n := len(p.q.pending)
		p.q.mu.Unlock()
		if n > 0 {
			if err := s.reroute(ctx, p, vs); err != nil {
				return err
			}
		}
	}
	return nil
}

// reroute moves every batch spooled for p (no longer a member, its sender
// stopped) to the owners of its URLs under vs, one batch at a time: the new
// batches are spooled in the same write that deletes the old one.
func (s *Splitter) reroute(ctx context.Context, p *peer, vs *viewState) error {
	p.q.flushMu.Lock()
	defer p.q.flushMu.Unlock()
	for _, seq := range p.q.pendingSeqs() {
		kind, _, enc, err := s.spool.st.getBatch(p.id, seq)
		if err != nil {
			return err
		}
		urls, err := DecodeBatch(enc, s.opts.Limits)
		if err != nil {
			return fmt.Errorf("hostsplit: re-route batch %d for %s: %w", seq, p.id, err)
		}
		source := "reroute/" + string(p.id) + "/" + strconv.FormatUint(s.spool.epoch(), 16)
		if err := s.routeOwned(ctx, vs, kind, urls, source, seq, [][]byte{spoolKey(p.id, seq)}); err != nil {
			return err
		}
		p.q.forget(seq)
		p.st.rerouted.Add(uint64(len(urls)))
	}
	return nil
}

// ResendLost re-routes, under the current view, every batch this node
// had sent to the members in lost and that they had acknowledged (the
// archive, see store): those members are gone with their disk, so what
// they were told is re-sent to the new owners of their hosts (a URL now
// owned by this node goes to the Local sink). Batches of KindURLs and
// KindQueued are re-sent as KindURLs, through the receiver's DUE (which
// drops what it already knows); KindSeen as KindSeen. Each archived batch
// is deleted in the write that spools its re-routed URLs, one batch at a
// time (memory holds one batch), so a crash or a second call resumes where
// it stopped; a batch delivered locally twice is deduplicated by the DUE
// and the (source, seq) marks. A member of the current view is an error.
// It returns the number of URLs re-sent.
func (s *Splitter) ResendLost(ctx context.Context, lost []NodeID) (uint64, error) {
	s.routeMu.RLock()
	defer s.routeMu.RUnlock()
	if s.routeClosed {
		return 0, ErrClosed
	}
	vs := s.own.state()
	var total uint64
	for _, id := range lost {
		if vs.v.Has(id) {
			return total, fmt.Errorf("%w: lost node %s is a member of view %d", ErrBadView, id, vs.v.Epoch)
		}
		n, err := s.resendArchive(ctx, vs, id)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// resendArchive re-routes the archive of id (ResendLost), holding id's
// flushMu if it is a known peer.
func (s *Splitter) resendArchive(ctx context.Context, vs *viewState, id NodeID) (total uint64, err error) {
	if p, ok := s.tr.peerByID(id); ok {
		p.q.flushMu.Lock()
		defer p.q.flushMu.Unlock()
	}
	for from, more := uint64(0), true; more; {
		var n uint64
		n, from, more, err = s.resendBatches(ctx, vs, id, from, seqRange{})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// seqRange is the sequence numbers from lo up to hi, excluded.
type seqRange struct{ lo, hi uint64 }

func (r seqRange) has(seq uint64) bool { return seq >= r.lo && seq < r.hi }

// resendBatches re-routes under vs up to resendChunk batches archived for
// id from seq from on, skipping those in skip, each deleted in the write
// that spools its URLs. Batches of KindURLs and KindQueued go as KindURLs
// (through the receiver's DUE), KindSeen as KindSeen. It returns the URLs
// re-sent, where to go on and whether more may follow.
func (s *Splitter) resendBatches(ctx context.Context, vs *viewState, id NodeID, from uint64, skip seqRange) (total, next uint64, more bool, err error) {
	if skip.has(from) {
		from = skip.hi
	}
	var chunk []archivedBatch
	if err = s.spool.withStore(func(st *store) (e error) {
		chunk, e = st.archived(id, from, resendChunk)
		return e
	}); err != nil || len(chunk) == 0 {
		return 0, from, false, err
	}
	source := "resend/" + string(id) + "/" + strconv.FormatUint(s.spool.epoch(), 16)
	for _, ab := range chunk {
		if skip.has(ab.seq) {
			return total, skip.hi, true, nil
		}
		if err = ctx.Err(); err != nil {
			return total, from, false, err
		}
		var urls []string
		if urls, err = DecodeBatch(ab.enc, s.opts.Limits); err != nil {
			return total, from, false, fmt.Errorf("hostsplit: re-send archived batch %d for %s: %w", ab.seq, id, err)
		}
		kind := ab.kind
		if kind != KindSeen {
			kind = KindURLs
		}
		if err = s.routeOwned(ctx, vs, kind, urls, source, ab.seq, [][]byte{archiveKey(id, ab.seq)}); err != nil {
			return total, from, false, err
		}
		total += uint64(len(urls))
		from = ab.seq + 1
	}
	return total, from, true, nil
}

// resendChunk is how many archived batches a resend reads at a time.
const resendChunk = 64

// SpoolHandoff spools URLs of kind (KindSeen or KindQueued) for their
// owners under the current view, durably and atomically with the metadata
// value meta[name] (the caller's resume mark; read it with Spool().Meta).
// URLs this node owns are an error: hand-offs go to other nodes.
func (s *Splitter) SpoolHandoff(urls []string, kind Kind, meta map[string][]byte) (batches, wireBytes uint64, err error) {
	s.routeMu.RLock()
	defer s.routeMu.RUnlock()
	if s.routeClosed {
		return 0, 0, ErrClosed
	}
	vs := s.own.state()
	groups := map[NodeID][]string{}
	for _, u := range urls {
		h, ok := Host(u)
		if !ok {
			continue
		}
		owner := vs.ring.Owner(h)
		if owner == s.opts.Self {
			return 0, 0, fmt.Errorf("hostsplit: hand-off of %q owned by this node", u)
		}
		groups[owner] = append(groups[owner], u)
	}
	before := s.spool.handoffBytes.Load()
	nb := s.spool.handoffBatches.Load()
	if err := s.spoolMany(groups, kind, meta, nil); err != nil {
		return 0, 0, err
	}
	return s.spool.handoffBatches.Load() - nb, s.spool.handoffBytes.Load() - before, nil
}

// deliverReceived implements node for the Transport: a batch whose URLs
// this node owns goes to the Local sink, any other is forwarded.
func (s *Splitter) deliverReceived(ctx context.Context, vs *viewState, kind Kind, urls []string, source string, seq uint64) (bool, error) {
	for _, u := range urls {
		if h, ok := Host(u); ok && vs.ring.Owner(h) != s.opts.Self {
			return true, s.routeOwned(ctx, vs, kind, urls, source, seq, nil)
		}
	}
	return false, s.deliverLocal(ctx, kind, urls, source, seq)
}

// routeOwned sends urls of kind to their owners under vs: this node's
// share to the Local sink (source and seq identify it for DeliverQueued),
// the rest spooled durably in one write together with deletes.
func (s *Splitter) routeOwned(ctx context.Context, vs *viewState, kind Kind, urls []string, source string, seq uint64, deletes [][]byte) error {
	var local []string
	groups := map[NodeID][]string{}
	for _, u := range urls {
		if owner := vs.ownerOf(u, s.opts.Self); owner == s.opts.Self {
			local = append(local, u)
		} else {
			groups[owner] = append(groups[owner], u)
		}
	}
	if len(local) > 0 {
		if err := s.deliverLocal(ctx, kind, local, source, seq); err != nil {
			return err
		}
	}
	return s.spoolMany(groups, kind, nil, deletes)
}

// deliverLocal hands URLs this node owns to the Local sink by kind.
func (s *Splitter) deliverLocal(ctx context.Context, kind Kind, urls []string, source string, seq uint64) error {
	if kind == KindURLs {
		return s.opts.Local.Deliver(ctx, urls)
	}
	hs, ok := s.opts.Local.(HandoffSink)
	if !ok {
		return fmt.Errorf("hostsplit: the Local sink takes no hand-offs (kind %d)", kind)
	}
	if kind == KindSeen {
		return hs.DeliverSeen(ctx, source, seq, urls)
	}
	return hs.DeliverQueued(ctx, source, seq, urls)
}

// spoolMany spools groups (URLs per peer, peers members of the current
// view) as batches of kind, plus the metadata and deletions, in one
// synced write. The caller holds routeMu (read or write) and, if it holds
// a peer's flushMu, that peer is not in groups.
func (s *Splitter) spoolMany(groups map[NodeID][]string, kind Kind, meta map[string][]byte, deletes [][]byte) error {
	var ids []NodeID
	for _, id := range slices.Sorted(maps.Keys(groups)) {
		if len(groups[id]) > 0 {
			ids = append(ids, id)
		}
	}
	peers, err := s.tr.senders(ids)
	if err != nil {
		return err
	}
	urls := make([][]string, len(ids))
	for i, id := range ids {
		urls[i] = groups[id]
	}
	return s.spool.appendMany(peers, urls, kind, meta, deletes)
}
