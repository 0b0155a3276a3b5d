package coord

import (
	"context"
	"fmt"
	"time"

	"github.com/sextant-crawler/sextant/internal/handoff"
)

// FenceAndCommit records the change r in etcd up to PhaseCommitting:
// Begin, PhaseFencing, Fence (the dropped members' leases revoked and
// their ids marked removed), then it waits out Fence's lease TTL — a
// dropped member cut off from etcd has stopped fetching by then — and
// commits r.New as the cluster's view. From the commit every member not
// yet on r.New is fenced until it adopts it, so the caller then drives the
// hand-off (PREPARE, COMMIT, RESUME) and ends with Finish. It returns the
// committed record and how long it waited.
//
// This is the control-plane half of `crawler cluster remove --lost` until
// the hand-off driver calls the Store itself.
func (s *Store) FenceAndCommit(ctx context.Context, r handoff.Record) (handoff.Record, time.Duration, error) {
	r, err := s.Begin(ctx, r)
	if err != nil {
		return r, 0, err
	}
	abort := func(err error) (handoff.Record, time.Duration, error) {
		if _, aerr := s.Advance(context.WithoutCancel(ctx), r, handoff.PhaseAborted); aerr != nil {
			s.o.Logger.Warn("coord: aborting change", "id", r.ID, "err", aerr)
		}
		return r, 0, err
	}
	if r, err = s.Advance(ctx, r, handoff.PhaseFencing); err != nil {
		return abort(err)
	}
	wait, err := s.Fence(ctx, r)
	if err != nil {
		return abort(err)
	}
	select {
	case <-ctx.Done():
		// The ids are marked removed already: the change must go forward.
		return r, 0, fmt.Errorf("coord: waiting out the fenced leases: %w", ctx.Err())
	case <-time.After(wait):
	}
	r, err = s.Commit(ctx, r)
	return r, wait, err
}

// Finish moves a committed change through PhaseResuming to PhaseDone.
func (s *Store) Finish(ctx context.Context, r handoff.Record) (handoff.Record, error) {
	r, err := s.Advance(ctx, r, handoff.PhaseResuming)
	if err != nil {
		return r, err
	}
	return s.Advance(ctx, r, handoff.PhaseDone)
}
