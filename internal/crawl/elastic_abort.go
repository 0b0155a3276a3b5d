package crawl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
)

// AbortOptions configure AbortChange.
type AbortOptions struct {
	// TLS is an operator's certificate (members refuse anyone else).
	TLS *tlsutil.Node
	// Members are the nodes to roll back: the current view's members (and
	// any joining node prepared for the change).
	Members []hostsplit.Member
	// Store, if set, records the abort (handoff.Store.Advance to
	// PhaseAborted) before the members are told.
	Store handoff.Store
}

// AbortReport says what AbortChange did.
type AbortReport struct {
	// Epoch is the epoch of the change rolled back (0: none was pending).
	Epoch uint64
	// RolledBack are the members that dropped the pending view.
	RolledBack []hostsplit.NodeID
}

// AbortChange rolls back a membership change that has not committed: every
// member prepared for it drops the pending view and fetches again on its
// current one (`crawler cluster abort`). It refuses, with an error wrapping
// handoff.ErrCommitted, once any member has committed to the change: then
// it can only go forward (run the change again to finish it).
func AbortChange(ctx context.Context, o AbortOptions) (AbortReport, error) {
	var rep AbortReport
	if o.TLS == nil {
		return rep, fmt.Errorf("%w: AbortOptions.TLS is required", ErrInvalidOptions)
	}
	states, err := MemberStates(ctx, o.TLS, o.Members)
	if len(states) == 0 {
		return rep, fmt.Errorf("crawl: abort: no member answered: %w", err)
	}
	var maxEpoch uint64
	for _, st := range states {
		rep.Epoch = max(rep.Epoch, st.GetPendingEpoch())
		maxEpoch = max(maxEpoch, st.GetView().GetEpoch())
	}
	if o.Store != nil {
		r, ok, serr := o.Store.Current(ctx)
		switch {
		case serr != nil:
			return rep, fmt.Errorf("crawl: abort: %w", serr)
		case ok && r.Phase.Open() && r.Phase != handoff.PhasePreparing && r.Phase != handoff.PhaseFencing:
			return rep, fmt.Errorf("%w: change %s to epoch %d is %s", handoff.ErrCommitted, r.ID, r.New.Epoch, r.Phase)
		case ok && r.Phase.Open():
			r.Reason = "aborted by " + certName(o.TLS)
			if _, serr := o.Store.Advance(ctx, r, handoff.PhaseAborted); serr != nil {
				return rep, fmt.Errorf("crawl: abort: recording it: %w", serr)
			}
			rep.Epoch = max(rep.Epoch, r.New.Epoch)
		}
	}
	if rep.Epoch == 0 {
		return rep, err // nothing pending (err: members that did not answer)
	}
	if maxEpoch >= rep.Epoch {
		var on []string
		for _, st := range states {
			if st.GetView().GetEpoch() >= rep.Epoch {
				on = append(on, st.GetNodeId())
			}
		}
		return rep, fmt.Errorf("%w: the change to epoch %d has committed on %v", handoff.ErrCommitted, rep.Epoch, on)
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	req := &pb.TransitionRequest{Phase: pb.TransitionRequest_PHASE_ROLLBACK, View: &pb.View{Epoch: rep.Epoch}}
	for _, m := range o.Members {
		cfg := o.TLS.ClientConfig(nil)
		cfg.VerifyConnection = knownVerifier(func(id hostsplit.NodeID) bool { return id == m.ID })
		cfg.ServerName = string(m.ID)
		c, cerr := grpc.NewClient(m.Addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if cerr != nil {
			errs = append(errs, cerr)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, terr := pb.NewMembershipClient(c).Transition(cctx, req)
		cancel()
		c.Close()
		if terr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.ID, terr))
			continue
		}
		if st.GetPendingEpoch() == 0 && !slices.Contains(rep.RolledBack, m.ID) {
			rep.RolledBack = append(rep.RolledBack, m.ID)
		}
	}
	return rep, errors.Join(errs...)
}
