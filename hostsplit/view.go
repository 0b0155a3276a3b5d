package hostsplit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/cockroachdb/pebble/v2"

	pb "github.com/sextant-crawler/sextant/proto"
)

// Kind says what a batch's URLs are for (proto BatchKind).
type Kind uint8

const (
	// KindURLs are discovered URLs: the receiver's DUE decides.
	KindURLs Kind = Kind(pb.BatchKind_BATCH_KIND_URLS)
	// KindSeen are URLs already fetched by the old owner of their host (a
	// hand-off): they join the receiver's seen-set, never its frontier.
	KindSeen Kind = Kind(pb.BatchKind_BATCH_KIND_SEEN)
	// KindQueued are queued, never fetched URLs of a host handed over: they
	// join the receiver's seen-set and go straight to its frontier.
	KindQueued Kind = Kind(pb.BatchKind_BATCH_KIND_QUEUED)
)

func (k Kind) valid() bool { return k <= KindQueued }

// HandoffSink is implemented by a Local sink that takes hand-offs (batches
// of KindSeen and KindQueued). Both must be durable when they return nil.
// A batch may be delivered again after a crash: what must not be applied
// twice (queued URLs, the seen URLs' count under the per-host budget) is
// applied at most once per (source, seq), seqs of one source increasing
// across both kinds (the frontier's AddBatch and AddAdmitted do that).
type HandoffSink interface {
	DeliverSeen(ctx context.Context, source string, seq uint64, urls []string) error
	DeliverQueued(ctx context.Context, source string, seq uint64, urls []string) error
}

// View is an epoch-numbered membership: which nodes own hosts. Every node
// acts on one view at a time; SetView moves it to a newer one.
type View struct {
	Epoch   uint64
	Members []Member
}

// IDs returns the member ids in order.
func (v View) IDs() []NodeID {
	ids := make([]NodeID, len(v.Members))
	for i, m := range v.Members {
		ids[i] = m.ID
	}
	return ids
}

// Has reports whether id is a member.
func (v View) Has(id NodeID) bool {
	return slices.ContainsFunc(v.Members, func(m Member) bool { return m.ID == id })
}

// Addr returns the address of member id.
func (v View) Addr(id NodeID) (string, bool) {
	for _, m := range v.Members {
		if m.ID == id {
			return m.Addr, true
		}
	}
	return "", false
}

// ViewToProto and ViewFromProto convert views for the Membership service.
func ViewToProto(v View) *pb.View {
	out := &pb.View{Epoch: v.Epoch}
	for _, m := range v.Members {
		out.Members = append(out.Members, &pb.ViewMember{Id: string(m.ID), Addr: m.Addr})
	}
	return out
}

func ViewFromProto(p *pb.View) View {
	v := View{Epoch: p.GetEpoch()}
	for _, m := range p.GetMembers() {
		v.Members = append(v.Members, Member{ID: NodeID(m.GetId()), Addr: m.GetAddr()})
	}
	return v
}

// Errors of membership changes.
var (
	ErrStaleView = errors.New("hostsplit: membership view is not newer than the current one")
	ErrBadView   = errors.New("hostsplit: invalid membership view")
)

func (v View) validate(self NodeID) error {
	if v.Epoch == 0 {
		return fmt.Errorf("%w: epoch 0", ErrBadView)
	}
	if _, err := NewRing(v.IDs(), false); err != nil {
		return fmt.Errorf("%w: %v", ErrBadView, err)
	}
	for _, m := range v.Members {
		if m.ID != self && m.Addr == "" {
			return fmt.Errorf("%w: member %q has no address", ErrBadView, m.ID)
		}
	}
	return nil
}

// viewState is the view a Splitter acts on, with its ring and the ids of
// the previous view (still accepted as senders: they may be handing hosts
// over).
type viewState struct {
	v    View
	ring *Ring
	prev []NodeID
	// removed are ids removed from the cluster for good (Retire): refused
	// whatever view names them.
	removed []NodeID
}

type savedView struct {
	Epoch   uint64   `json:"epoch"`
	Members []Member `json:"members"`
	Prev    []NodeID `json:"prev,omitempty"`
	Removed []NodeID `json:"removed,omitempty"`
}

func (st *store) loadView() (savedView, bool, error) {
	v, ok, err := st.meta("view")
	if err != nil || !ok {
		return savedView{}, false, err
	}
	var sv savedView
	if err := json.Unmarshal(v, &sv); err != nil {
		return savedView{}, false, fmt.Errorf("hostsplit: stored view: %w", err)
	}
	return sv, true, nil
}

func (st *store) saveView(vs *viewState) error {
	b, err := json.Marshal(savedView{Epoch: vs.v.Epoch, Members: vs.v.Members, Prev: vs.prev, Removed: vs.removed})
	if err != nil {
		return err
	}
	return st.setMeta("view", b)
}

// View returns the membership view this node acts on.
func (s *Splitter) View() View {
	vs := s.view.Load()
	return View{Epoch: vs.v.Epoch, Members: slices.Clone(vs.v.Members)}
}

// Epoch is the epoch of the current view (0: a joining node that has not
// adopted a view yet).
func (s *Splitter) Epoch() uint64 { return s.view.Load().v.Epoch }

// Expect makes the members of v (a view being changed to) acceptable as
// senders and callers before SetView adopts it; their batches are refused
// with codes.Aborted (retry soon) until then.
func (s *Splitter) Expect(v View) {
	s.expect.Store(&v)
}

// Unexpect forgets the view Expect was given (a change rolled back).
func (s *Splitter) Unexpect() {
	s.expect.Store(nil)
}

// ErrRemovedID: the node id was removed from the cluster (Retire) and may
// not come back under that id.
var ErrRemovedID = errors.New("hostsplit: node id was removed from the cluster")

// Known reports whether id may call this node: a member of the current,
// the previous or the expected view, unless it was removed (Retire).
func (s *Splitter) Known(id NodeID) bool {
	if id == s.opts.Self {
		return true
	}
	vs := s.view.Load()
	if slices.Contains(vs.removed, id) {
		return false
	}
	if vs.v.Has(id) || slices.Contains(vs.prev, id) {
		return true
	}
	if e := s.expect.Load(); e != nil && e.Has(id) {
		return true
	}
	return false
}

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
	s.setViewMu.Lock()
	defer s.setViewMu.Unlock()
	cur := s.view.Load()
	if v.Epoch == cur.v.Epoch && slices.Equal(v.IDs(), cur.v.IDs()) {
		return nil
	}
	for _, id := range v.IDs() {
		if slices.Contains(cur.removed, id) {
			return fmt.Errorf("%w: %s", ErrRemovedID, id)
		}
	}
	if v.Epoch <= cur.v.Epoch {
		return fmt.Errorf("%w: have %d, got %d", ErrStaleView, cur.v.Epoch, v.Epoch)
	}
	ring, err := NewRing(v.IDs(), s.opts.ByDomain)
	if err != nil {
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
	for _, p := range s.currentPeers() {
		errs = append(errs, s.flushPeer(p, true))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	nvs := &viewState{v: v, ring: ring, prev: cur.v.IDs(), removed: cur.removed}
	if err := s.store.saveView(nvs); err != nil {
		return err
	}
	s.peersMu.Lock()
	var order, gone []*peer
	for _, m := range v.Members {
		if m.ID == s.opts.Self {
			continue
		}
		p := s.peers[m.ID]
		if p == nil {
			if p, err = s.newPeer(m.ID); err != nil {
				s.peersMu.Unlock()
				return err
			}
			s.peers[m.ID] = p
		}
		if p.conn == nil {
			if err := s.dial(p, m.Addr); err != nil {
				s.peersMu.Unlock()
				return err
			}
			s.startSender(p)
		}
		order = append(order, p)
	}
	for _, p := range s.order {
		if !v.Has(p.id) {
			gone = append(gone, p)
		}
	}
	s.order = order
	s.view.Store(nvs)
	s.peersMu.Unlock()
	for _, p := range gone {
		s.stopSender(p)
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
	vs := s.view.Load()
	for _, p := range s.allPeers() {
		if vs.v.Has(p.id) {
			continue
		}
		p.outMu.Lock()
		n := len(p.pending)
		p.outMu.Unlock()
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
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	p.outMu.Lock()
	seqs := slices.Sorted(maps.Keys(p.pending))
	p.outMu.Unlock()
	for _, seq := range seqs {
		kind, _, enc, err := s.store.getBatch(p.id, seq)
		if err != nil {
			return err
		}
		urls, err := DecodeBatch(enc, s.opts.Limits)
		if err != nil {
			return fmt.Errorf("hostsplit: re-route batch %d for %s: %w", seq, p.id, err)
		}
		source := "reroute/" + string(p.id) + "/" + strconv.FormatUint(s.store.epoch, 16)
		if err := s.routeOwned(ctx, vs, kind, urls, source, seq, [][]byte{spoolKey(p.id, seq)}); err != nil {
			return err
		}
		p.outMu.Lock()
		if n, ok := p.pending[seq]; ok {
			delete(p.pending, seq)
			p.pendingURLs -= n
		}
		delete(p.spooledAt, seq)
		p.acked = max(p.acked, seq)
		p.outMu.Unlock()
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
	vs := s.view.Load()
	var total uint64
	for _, id := range lost {
		if vs.v.Has(id) {
			return total, fmt.Errorf("%w: lost node %s is a member of view %d", ErrBadView, id, vs.v.Epoch)
		}
		if p, ok := s.peerByID(id); ok {
			p.flushMu.Lock()
		}
		source := "resend/" + string(id) + "/" + strconv.FormatUint(s.store.epoch, 16)
		var err error
		for from := uint64(0); ; {
			var chunk []archivedBatch
			if err = s.withStore(func(st *store) (e error) {
				chunk, e = st.archived(id, from, resendChunk)
				return e
			}); err != nil || len(chunk) == 0 {
				break
			}
			for _, ab := range chunk {
				if err = ctx.Err(); err != nil {
					break
				}
				var urls []string
				if urls, err = DecodeBatch(ab.enc, s.opts.Limits); err != nil {
					err = fmt.Errorf("hostsplit: re-send archived batch %d for %s: %w", ab.seq, id, err)
					break
				}
				kind := ab.kind
				if kind != KindSeen {
					kind = KindURLs
				}
				if err = s.routeOwned(ctx, vs, kind, urls, source, ab.seq, [][]byte{archiveKey(id, ab.seq)}); err != nil {
					break
				}
				total += uint64(len(urls))
				from = ab.seq + 1
			}
			if err != nil {
				break
			}
		}
		if p, ok := s.peerByID(id); ok {
			p.flushMu.Unlock()
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// resendChunk is how many archived batches ResendLost reads at a time.
const resendChunk = 64

// DropArchive forgets the batches acknowledged by id, a node that left
// gracefully (its hand-off moved what it knew): nothing will re-send them.
func (s *Splitter) DropArchive(id NodeID) error {
	return s.withStore(func(st *store) error { return st.dropArchive(id) })
}

// ArchiveSize returns the number of URLs and the bytes (encoded batches,
// as stored before pebble's own compression) archived for peer id
// (acknowledged, kept for ResendLost).
func (s *Splitter) ArchiveSize(id NodeID) (urls, bytes uint64, err error) {
	err = s.withStore(func(st *store) error {
		urls, bytes, err = st.archiveSize(id)
		return err
	})
	return urls, bytes, err
}

// withStore runs fn on the store unless the splitter is closed.
func (s *Splitter) withStore(fn func(*store) error) error {
	s.storeMu.RLock()
	defer s.storeMu.RUnlock()
	if s.storeClosed {
		return ErrClosed
	}
	return fn(s.store)
}

// routeOwned sends urls of kind to their owners under vs: this node's
// share to the Local sink (source and seq identify it for DeliverQueued),
// the rest spooled durably in one write together with deletes.
func (s *Splitter) routeOwned(ctx context.Context, vs *viewState, kind Kind, urls []string, source string, seq uint64, deletes [][]byte) error {
	var local []string
	groups := map[NodeID][]string{}
	for _, u := range urls {
		owner := s.opts.Self
		if h, ok := Host(u); ok {
			owner = vs.ring.Owner(h)
		}
		if owner == s.opts.Self {
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

// SpoolHandoff spools URLs of kind (KindSeen or KindQueued) for their
// owners under the current view, durably and atomically with the metadata
// value meta[name] (the caller's resume mark; read it with Meta). URLs this
// node owns are an error: hand-offs go to other nodes.
func (s *Splitter) SpoolHandoff(urls []string, kind Kind, meta map[string][]byte) (batches, wireBytes uint64, err error) {
	s.routeMu.RLock()
	defer s.routeMu.RUnlock()
	if s.routeClosed {
		return 0, 0, ErrClosed
	}
	vs := s.view.Load()
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
	before := s.handoffBytes.Load()
	nb := s.handoffBatches.Load()
	if err := s.spoolMany(groups, kind, meta, nil); err != nil {
		return 0, 0, err
	}
	return s.handoffBatches.Load() - nb, s.handoffBytes.Load() - before, nil
}

// Meta returns a metadata value stored by SpoolHandoff or SetMeta.
func (s *Splitter) Meta(name string) ([]byte, bool, error) {
	s.storeMu.RLock()
	defer s.storeMu.RUnlock()
	if s.storeClosed {
		return nil, false, ErrClosed
	}
	return s.store.meta(name)
}

// SetMeta stores a metadata value durably.
func (s *Splitter) SetMeta(name string, v []byte) error {
	s.storeMu.RLock()
	defer s.storeMu.RUnlock()
	if s.storeClosed {
		return ErrClosed
	}
	return s.store.setMeta(name, v)
}

// spoolMany spools groups (URLs per peer, peers members of the current
// view) as batches of kind, plus the metadata and deletions, in one
// synced write. The caller holds routeMu (read or write) and, if it holds
// a peer's flushMu, that peer is not in groups.
func (s *Splitter) spoolMany(groups map[NodeID][]string, kind Kind, meta map[string][]byte, deletes [][]byte) error {
	ids := make([]NodeID, 0, len(groups))
	for id, urls := range groups {
		if len(urls) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	type out struct {
		p     *peer
		count int
		enc   []byte
		raw   int
	}
	var outs []out
	var peers []*peer
	for _, id := range ids {
		p, ok := s.peerByID(id)
		if !ok || p.conn == nil {
			return fmt.Errorf("hostsplit: no sender for %s", id)
		}
		peers = append(peers, p)
	}
	for _, p := range peers {
		p.flushMu.Lock()
	}
	defer func() {
		for _, p := range peers {
			p.flushMu.Unlock()
		}
	}()
	for i, id := range ids {
		urls := slices.Clone(groups[id])
		slices.Sort(urls)
		urls = slices.Compact(urls)
		for len(urls) > 0 {
			n, size := 0, 0
			for n < len(urls) && n < s.opts.BatchMaxURLs && size+len(urls[n]) <= s.opts.BatchMaxBytes {
				size += len(urls[n])
				n++
			}
			n = max(n, 1)
			if len(urls[0]) > s.opts.Limits.MaxURLLen {
				peers[i].st.tooLong.Add(1)
				urls = urls[1:]
				continue
			}
			enc, err := EncodeBatch(nil, urls[:n], s.opts.Codec)
			if err != nil {
				return err
			}
			outs = append(outs, out{p: peers[i], count: n, enc: enc, raw: size})
			urls = urls[n:]
		}
	}
	if len(outs) == 0 && len(meta) == 0 && len(deletes) == 0 {
		return nil
	}
	s.storeMu.RLock()
	defer s.storeMu.RUnlock()
	if s.storeClosed {
		return ErrClosed
	}
	b := s.store.db.NewBatch()
	defer b.Close()
	seqs := make([]uint64, len(outs))
	next := map[*peer]uint64{}
	for i, o := range outs {
		if _, ok := next[o.p]; !ok {
			o.p.outMu.Lock()
			next[o.p] = o.p.lastSeq
			o.p.outMu.Unlock()
		}
		next[o.p]++
		seqs[i] = next[o.p]
		s.store.setBatch(b, o.p.id, seqs[i], kind, o.count, o.enc)
	}
	for name, v := range meta {
		_ = b.Set(metaKey(name), v, nil)
	}
	for _, k := range deletes {
		_ = b.Delete(k, nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("hostsplit: spool write: %w", err)
	}
	for i, o := range outs {
		p := o.p
		p.outMu.Lock()
		p.lastSeq = seqs[i]
		p.pending[seqs[i]] = o.count
		p.spooledAt[seqs[i]] = s.opts.Clock.Now()
		p.pendingURLs += o.count
		p.outMu.Unlock()
		p.st.sentURLs.Add(uint64(o.count))
		p.st.sentBatches.Add(1)
		p.st.spooledBytes.Add(uint64(len(o.enc)))
		p.st.rawBytes.Add(uint64(o.raw))
		if kind != KindURLs {
			s.handoffBatches.Add(1)
			s.handoffBytes.Add(uint64(len(o.enc)))
		}
		select {
		case p.notify <- struct{}{}:
		default:
		}
	}
	return nil
}

// NodeStatusFromProto converts a Status answer (for callers outside the
// cluster, such as `crawler cluster`).
func NodeStatusFromProto(r *pb.StatusResponse) NodeStatus { return statusFromProto(r) }

// NodeStatusToProto converts a NodeStatus to its wire form (what Peer/Status
// returns).
func NodeStatusToProto(ns NodeStatus) *pb.StatusResponse { return ns.toProto() }

// PreviousMembers returns the member ids of the view before the current
// one (nil if this node has adopted no change).
func (s *Splitter) PreviousMembers() []NodeID { return slices.Clone(s.view.Load().prev) }

// Retire records as removed for good every member of the previous view
// that the current one dropped: once a membership change is done (its
// hand-offs applied), they are refused as callers and senders even though
// they were in the previous view, and no later view may name them. The
// list is persisted with the view.
func (s *Splitter) Retire() error {
	s.setViewMu.Lock()
	defer s.setViewMu.Unlock()
	cur := s.view.Load()
	removed := slices.Clone(cur.removed)
	for _, id := range cur.prev {
		if !cur.v.Has(id) && id != s.opts.Self && !slices.Contains(removed, id) {
			removed = append(removed, id)
		}
	}
	if len(removed) == len(cur.removed) {
		return nil
	}
	nvs := &viewState{v: cur.v, ring: cur.ring, prev: cur.prev, removed: removed}
	if err := s.store.saveView(nvs); err != nil {
		return err
	}
	s.view.Store(nvs)
	return nil
}

// Removed returns the ids removed for good (Retire).
func (s *Splitter) Removed() []NodeID { return slices.Clone(s.view.Load().removed) }
