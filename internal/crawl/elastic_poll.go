package crawl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
	pb "github.com/sextant-crawler/sextant/proto"
)

// poll replaces the running status poll with one that reports EvDrained
// (epoch 0) or EvApplied (every node on epoch, every batch applied) after
// two consecutive Drained rounds; members seen in an unexpected state
// (restarted, or rolled back by themselves) are reported as EvRestarted.
func (d *changeDriver) poll(ctx context.Context, epoch uint64) {
	if d.pollCancel != nil {
		d.pollCancel()
	}
	pctx, cancel := context.WithCancel(ctx)
	d.pollCancel = cancel
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		var why error
		for n := 1; ; n++ {
			select {
			case <-pctx.Done():
				return
			case <-time.After(d.o.Poll):
			}
			r1, s1, err := d.statusRound(pctx)
			if err == nil {
				var r2 []hostsplit.NodeStatus
				if r2, _, err = d.statusRound(pctx); err == nil {
					err = hostsplit.Drained(r1, r2)
					for _, ns := range r2 {
						if err == nil && epoch > 0 && ns.Epoch != epoch {
							err = fmt.Errorf("%s is on epoch %d", ns.Node, ns.Epoch)
						}
					}
				}
			}
			if err == nil {
				kind := handoff.EvDrained
				if epoch > 0 {
					kind = handoff.EvApplied
				}
				d.emit(pctx, drvEvent{ev: handoff.Event{Kind: kind, ChangeID: d.rec.ID}})
				return
			}
			why = err
			if n%20 == 0 {
				d.o.Logger.Info("cluster: not drained yet", "epoch", d.rec.New.Epoch, "why", why)
				for _, st := range s1 {
					phase, ep := st.GetPhase(), st.GetView().GetEpoch()
					if (epoch == 0 && phase == PhaseRunning) || (epoch > 0 && ep < epoch) {
						d.emit(pctx, drvEvent{ev: handoff.Event{Kind: handoff.EvRestarted, Member: hostsplit.NodeID(st.GetNodeId()),
							MemberPhase: phase, Epoch: ep}})
					}
				}
			}
		}
	}()
}

// statusRound asks every participant for its state and Peer status.
func (d *changeDriver) statusRound(ctx context.Context) ([]hostsplit.NodeStatus, []*pb.MemberState, error) {
	out := make([]hostsplit.NodeStatus, len(d.parts))
	states := make([]*pb.MemberState, len(d.parts))
	for i, id := range d.parts {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := pb.NewMembershipClient(d.conns[id]).GetView(cctx, &pb.GetViewRequest{WithStatus: true})
		cancel()
		if err != nil {
			return nil, states, fmt.Errorf("status of %s: %w", id, err)
		}
		states[i] = st
		ns := hostsplit.NodeStatusFromProto(st.GetStatus())
		// Batches for lost members are re-routed at COMMIT; until then
		// they cannot be acknowledged.
		ns.Channels = slices.DeleteFunc(ns.Channels, func(c hostsplit.Channel) bool { return slices.Contains(d.rec.Lost, c.Peer) })
		out[i] = ns
	}
	return out, states, nil
}

func (d *changeDriver) allCommitted(ctx context.Context) bool {
	for _, id := range d.parts {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := pb.NewMembershipClient(d.conns[id]).GetView(cctx, &pb.GetViewRequest{})
		cancel()
		if err != nil || st.GetView().GetEpoch() != d.rec.New.Epoch {
			return false
		}
	}
	return true
}

// resumeAll sends RESUME to every participant, retrying while ctx lasts.
func (d *changeDriver) resumeAll(ctx context.Context) ([]*pb.MemberState, error) {
	return d.transitionAll(ctx, &pb.TransitionRequest{Phase: pb.TransitionRequest_PHASE_RESUME, View: d.view, ChangeId: d.rec.ID})
}

// transitionAll sends req to every participant at once, each retried
// while ctx lasts (a repeated transition is a no-op on a member).
func (d *changeDriver) transitionAll(ctx context.Context, req *pb.TransitionRequest) ([]*pb.MemberState, error) {
	out := make([]*pb.MemberState, len(d.parts))
	errs := make([]error, len(d.parts))
	var wg sync.WaitGroup
	for i, id := range d.parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				st, err := pb.NewMembershipClient(d.conns[id]).Transition(cctx, req)
				cancel()
				if err == nil {
					out[i] = st
					return
				}
				d.o.Logger.Warn("cluster: phase failed; retrying", "phase", req.Phase, "member", id, "err", err)
				select {
				case <-ctx.Done():
					errs[i] = fmt.Errorf("crawl: %s on %s: %w", req.Phase, id, errors.Join(err, ctx.Err()))
					return
				case <-time.After(5 * d.o.Poll):
				}
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
