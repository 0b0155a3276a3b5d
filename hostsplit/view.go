package hostsplit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Kind says what a batch's URLs are for. The values are those of the wire's
// BatchKind (wire.go converts; a test checks they agree).
type Kind uint8

const (
	// KindURLs are discovered URLs: the receiver's DUE decides.
	KindURLs Kind = 0
	// KindSeen are URLs already fetched by the old owner of their host (a
	// hand-off): they join the receiver's seen-set, never its frontier.
	KindSeen Kind = 1
	// KindQueued are queued, never fetched URLs of a host handed over: they
	// join the receiver's seen-set and go straight to its frontier.
	KindQueued Kind = 2
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

// Errors of membership changes.
var (
	ErrStaleView = errors.New("hostsplit: membership view is not newer than the current one")
	ErrBadView   = errors.New("hostsplit: invalid membership view")
	// ErrRemovedID: the node id was removed from the cluster (Retire) and
	// may not come back under that id.
	ErrRemovedID = errors.New("hostsplit: node id was removed from the cluster")
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

// viewState is the view a node acts on, with its ring and the ids of the
// previous view (still accepted as senders: they may be handing hosts
// over). It is immutable.
type viewState struct {
	v    View
	ring *Ring
	prev []NodeID
	// removed are ids removed from the cluster for good (Retire): refused
	// whatever view names them.
	removed []NodeID
}

// ownerOf returns the owner of u's host; a URL without a host is self's.
func (vs *viewState) ownerOf(u string, self NodeID) NodeID {
	if h, ok := Host(u); ok {
		return vs.ring.Owner(h)
	}
	return self
}

// next returns the state that adopting v (validated) leads to from vs, or
// nil for a no-op (same epoch and members). Pure: it changes nothing.
func (vs *viewState) next(v View, byDomain bool) (*viewState, error) {
	if v.Epoch == vs.v.Epoch && slices.Equal(v.IDs(), vs.v.IDs()) {
		return nil, nil
	}
	for _, id := range v.IDs() {
		if slices.Contains(vs.removed, id) {
			return nil, fmt.Errorf("%w: %s", ErrRemovedID, id)
		}
	}
	if v.Epoch <= vs.v.Epoch {
		return nil, fmt.Errorf("%w: have %d, got %d", ErrStaleView, vs.v.Epoch, v.Epoch)
	}
	ring, err := NewRing(v.IDs(), byDomain)
	if err != nil {
		return nil, err
	}
	return &viewState{v: v, ring: ring, prev: vs.v.IDs(), removed: vs.removed}, nil
}

// retired returns vs with every member of the previous view that the
// current one dropped added to removed, or nil if that adds none.
func (vs *viewState) retired(self NodeID) *viewState {
	removed := slices.Clone(vs.removed)
	for _, id := range vs.prev {
		if !vs.v.Has(id) && id != self && !slices.Contains(removed, id) {
			removed = append(removed, id)
		}
	}
	if len(removed) == len(vs.removed) {
		return nil
	}
	return &viewState{v: vs.v, ring: vs.ring, prev: vs.prev, removed: removed}
}

// Ownership is the ownership ring of a node: the membership view it acts
// on, the owner of each host under it, the view it expects next and the
// ids retired for good. The Splitter changes the view (SetView); every
// view is persisted in the spool before it is used. Safe for concurrent
// use.
type Ownership struct {
	self NodeID
	save func(*viewState) error // persists a view

	cur    atomic.Pointer[viewState] // replaced by install (and Retire)
	expect atomic.Pointer[View]      // a view being changed to (Expect)
	mu     sync.Mutex                // serialises changes: SetView and Retire
}

func newOwnership(self NodeID, vs *viewState, save func(*viewState) error) *Ownership {
	o := &Ownership{self: self, save: save}
	o.cur.Store(vs)
	return o
}

func (o *Ownership) state() *viewState { return o.cur.Load() }

// install makes vs current. The caller holds o.mu, the Splitter's routeMu
// (write) and the Transport's mu, so that Route, receivers and peer
// lookups see the view and the peers change together.
func (o *Ownership) install(vs *viewState) { o.cur.Store(vs) }

// View returns the membership view this node acts on.
func (o *Ownership) View() View {
	vs := o.cur.Load()
	return View{Epoch: vs.v.Epoch, Members: slices.Clone(vs.v.Members)}
}

// Epoch is the epoch of the current view (0: a joining node that has not
// adopted a view yet).
func (o *Ownership) Epoch() uint64 { return o.cur.Load().v.Epoch }

// Ring returns the ring of the current view. It changes with SetView.
func (o *Ownership) Ring() *Ring { return o.cur.Load().ring }

// Owner returns the member that owns host under the current view.
func (o *Ownership) Owner(host string) NodeID { return o.cur.Load().ring.Owner(host) }

// PreviousMembers returns the member ids of the view before the current
// one (nil if this node has adopted no change).
func (o *Ownership) PreviousMembers() []NodeID { return slices.Clone(o.cur.Load().prev) }

// Removed returns the ids removed for good (Retire).
func (o *Ownership) Removed() []NodeID { return slices.Clone(o.cur.Load().removed) }

// Expect makes the members of v (a view being changed to) acceptable as
// senders and callers before SetView adopts it; their batches are refused
// with codes.Aborted (retry soon) until then.
func (o *Ownership) Expect(v View) { o.expect.Store(&v) }

// Unexpect forgets the view Expect was given (a change rolled back).
func (o *Ownership) Unexpect() { o.expect.Store(nil) }

// Known reports whether id may call this node: a member of the current,
// the previous or the expected view, unless it was removed (Retire).
func (o *Ownership) Known(id NodeID) bool {
	if id == o.self {
		return true
	}
	vs := o.cur.Load()
	if slices.Contains(vs.removed, id) {
		return false
	}
	if vs.v.Has(id) || slices.Contains(vs.prev, id) {
		return true
	}
	if e := o.expect.Load(); e != nil && e.Has(id) {
		return true
	}
	return false
}

// Retire records as removed for good every member of the previous view
// that the current one dropped: once a membership change is done (its
// hand-offs applied), they are refused as callers and senders even though
// they were in the previous view, and no later view may name them. The
// list is persisted with the view.
func (o *Ownership) Retire() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	nvs := o.cur.Load().retired(o.self)
	if nvs == nil {
		return nil
	}
	if err := o.save(nvs); err != nil {
		return err
	}
	o.cur.Store(nvs)
	return nil
}
