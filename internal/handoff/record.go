// Package handoff is the agreement part of a membership change: what a
// change has done, what it must do next, and where its progress is
// recorded so that any operator (or its timeout) can finish or roll back a
// change a crashed coordinator left half-done.
//
// This file is the seam between the coordinator (internal/crawl's
// ChangeMembership, which drives a change) and the control plane that
// records it (internal/coord, on etcd). The coordinator consumes Store;
// the control plane implements it.
package handoff

import (
	"context"
	"errors"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// Phase is where a membership change stands, as recorded in the Store.
type Phase string

const (
	// PhasePreparing: PREPARE sent; members pause and drain. A change
	// that has not reached PhaseCommitting by its Deadline is rolled back.
	PhasePreparing Phase = "preparing"
	// PhaseFencing: the Lost members' leases are revoked and recorded as
	// removed; the change waits out their lease TTL so that a cut-off
	// member has stopped fetching before its hosts get new owners.
	PhaseFencing Phase = "fencing"
	// PhaseCommitting: the new view is the cluster's view (recorded in
	// the same transaction); members adopt it and hand hosts over. From
	// here a change only goes forward.
	PhaseCommitting Phase = "committing"
	// PhaseResuming: every hand-off is applied; members fetch again.
	PhaseResuming Phase = "resuming"
	// PhaseDone and PhaseAborted end a change; the record stays until the
	// next change begins, so that late members can read the outcome.
	PhaseDone    Phase = "done"
	PhaseAborted Phase = "aborted"
)

// Open reports whether a change in phase p is still in progress.
func (p Phase) Open() bool { return p != "" && p != PhaseDone && p != PhaseAborted }

// Record is one membership change as the control plane stores it.
type Record struct {
	// ID names the change (random, chosen by Begin's caller).
	ID       string
	Old, New hostsplit.View
	// Lost are members of Old gone with their disk (`remove --lost`):
	// fenced, never contacted.
	Lost  []hostsplit.NodeID
	Phase Phase
	// Deadline: a change still before PhaseCommitting then is rolled
	// back (by any member or operator that notices).
	Deadline time.Time
	// Operator is the identity (certificate common name) that began it.
	Operator string
	// Reason says why a change was aborted.
	Reason string
	// Rev is the store revision this record was read or written at; the
	// next Advance is conditioned on it (compare-and-swap).
	Rev int64
}

// Sentinel errors of a Store.
var (
	// ErrBusy: another change is open; finish it or abort it first.
	ErrBusy = errors.New("handoff: another membership change is in progress")
	// ErrStale: the record or view given is not the current one.
	ErrStale = errors.New("handoff: membership state changed underneath (stale revision)")
	// ErrDenied: the caller's identity may not do this.
	ErrDenied = errors.New("handoff: permission denied")
	// ErrRemoved: the node id was removed from the cluster and may not
	// come back under that id.
	ErrRemoved = errors.New("handoff: node id was removed from the cluster")
)

// Store is where the cluster's view and the change in progress are agreed
// (etcd in production, a map in tests). Every method is atomic; a method
// that writes is conditioned on the revision it was given and fails with
// ErrStale when someone else wrote first.
type Store interface {
	// View returns the cluster's current view.
	View(ctx context.Context) (hostsplit.View, error)
	// Current returns the latest change record (open or ended), ok=false
	// if no change was ever made.
	Current(ctx context.Context) (r Record, ok bool, err error)
	// Begin records r (Phase PhasePreparing) if r.Old is the current view
	// and no change is open: ErrBusy, ErrStale, ErrRemoved (r.New names a
	// removed id) otherwise.
	Begin(ctx context.Context, r Record) (Record, error)
	// Advance moves r to phase to (not PhaseCommitting: see Commit);
	// PhaseAborted only before PhaseCommitting.
	Advance(ctx context.Context, r Record, to Phase) (Record, error)
	// Fence revokes the leases of r.Lost and of members r.New drops, and
	// records their ids as removed; it returns how long the caller must
	// wait before those members are sure to have stopped fetching (the
	// lease TTL).
	Fence(ctx context.Context, r Record) (time.Duration, error)
	// Commit makes r.New the cluster's view and moves r to
	// PhaseCommitting, in one transaction.
	Commit(ctx context.Context, r Record) (Record, error)
}
