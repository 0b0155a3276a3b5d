package handoff

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// MemStore is a Store in memory: for tests, and for a cluster run without a
// control plane (gRPC only), where the coordinator's process is the only
// place a change is recorded. It has no leases: Fence records the ids as
// removed and returns FenceTTL. Safe for concurrent use; no Close.
type MemStore struct {
	// FenceTTL is what Fence returns (0: nothing to wait for).
	FenceTTL time.Duration
	// Now is the clock Commit checks the deadline against; default time.Now.
	Now func() time.Time

	mu      sync.Mutex
	view    hostsplit.View
	rec     Record
	has     bool
	removed []hostsplit.NodeID
	fenced  []hostsplit.NodeID // by the open change: un-removed if it aborts
	rev     int64
}

// NewMemStore returns a MemStore whose view is v.
func NewMemStore(v hostsplit.View) *MemStore {
	return &MemStore{view: cloneView(v)}
}

func cloneView(v hostsplit.View) hostsplit.View {
	return hostsplit.View{Epoch: v.Epoch, Members: slices.Clone(v.Members)}
}

func cloneRecord(r Record) Record {
	r.Old, r.New, r.Lost = cloneView(r.Old), cloneView(r.New), slices.Clone(r.Lost)
	return r
}

// View implements Store.
func (s *MemStore) View(context.Context) (hostsplit.View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneView(s.view), nil
}

// Current implements Store.
func (s *MemStore) Current(context.Context) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneRecord(s.rec), s.has, nil
}

// Removed returns the ids recorded as removed.
func (s *MemStore) Removed() []hostsplit.NodeID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.removed)
}

// Begin implements Store.
func (s *MemStore) Begin(_ context.Context, r Record) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.has && s.rec.Phase.Open() {
		return Record{}, fmt.Errorf("%w: %s (%s)", ErrBusy, s.rec.ID, s.rec.Phase)
	}
	if r.Old.Epoch != s.view.Epoch || !slices.Equal(r.Old.IDs(), s.view.IDs()) {
		return Record{}, fmt.Errorf("%w: change from epoch %d, the view is epoch %d", ErrStale, r.Old.Epoch, s.view.Epoch)
	}
	for _, id := range r.New.IDs() {
		if slices.Contains(s.removed, id) {
			return Record{}, fmt.Errorf("%w: %s", ErrRemoved, id)
		}
	}
	s.rev++
	r = cloneRecord(r)
	r.Phase, r.Rev = PhasePreparing, s.rev
	s.rec, s.has, s.fenced = r, true, nil
	return cloneRecord(r), nil
}

// checkLocked returns the stored record if r is it at its revision.
func (s *MemStore) checkLocked(r Record) error {
	if !s.has || r.ID != s.rec.ID || r.Rev != s.rec.Rev {
		return fmt.Errorf("%w: change %s at revision %d, stored %s at %d", ErrStale, r.ID, r.Rev, s.rec.ID, s.rec.Rev)
	}
	return nil
}

// Advance implements Store.
func (s *MemStore) Advance(_ context.Context, r Record, to Phase) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(r); err != nil {
		return Record{}, err
	}
	cur := s.rec.Phase
	ok := map[Phase][]Phase{
		PhasePreparing:  {PhaseFencing, PhaseAborted},
		PhaseFencing:    {PhaseAborted},
		PhaseCommitting: {PhaseResuming},
		PhaseResuming:   {PhaseDone},
	}[cur]
	if !slices.Contains(ok, to) {
		return Record{}, fmt.Errorf("%w: cannot move change %s from %s to %s", ErrStale, r.ID, cur, to)
	}
	s.rev++
	s.rec.Phase, s.rec.Rev = to, s.rev
	if to == PhaseAborted {
		s.rec.Reason = r.Reason
		// No leases here: the fenced ids are members of the view again.
		s.removed = slices.DeleteFunc(s.removed, func(id hostsplit.NodeID) bool { return slices.Contains(s.fenced, id) })
	}
	s.fenced = nil
	return cloneRecord(s.rec), nil
}

// Fence implements Store: the ids are recorded as removed.
func (s *MemStore) Fence(_ context.Context, r Record) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(r); err != nil {
		return 0, err
	}
	for _, m := range s.rec.Old.Members {
		if !s.rec.New.Has(m.ID) && !slices.Contains(s.removed, m.ID) {
			s.removed = append(s.removed, m.ID)
			s.fenced = append(s.fenced, m.ID)
		}
	}
	return s.FenceTTL, nil
}

// Commit implements Store. A change past its deadline is refused (ErrStale):
// its members roll back by themselves then.
func (s *MemStore) Commit(_ context.Context, r Record) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(r); err != nil {
		return Record{}, err
	}
	if p := s.rec.Phase; p != PhasePreparing && p != PhaseFencing {
		return Record{}, fmt.Errorf("%w: cannot commit change %s in phase %s", ErrStale, r.ID, p)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	if d := s.rec.Deadline; !d.IsZero() && !now().Before(d) {
		return Record{}, fmt.Errorf("%w: change %s passed its deadline %v", ErrStale, r.ID, d)
	}
	s.rev++
	s.rec.Phase, s.rec.Rev = PhaseCommitting, s.rev
	s.view = cloneView(s.rec.New)
	return cloneRecord(s.rec), nil
}
