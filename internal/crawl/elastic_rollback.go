package crawl

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
)

// Rolling back an uncommitted change (issue 25 defect 2), and who may
// change membership (defect 3).
//
// A PREPARE carries the change's deadline. A member still prepared, not
// committed, SelfRollbackGrace after it drops the pending view and fetches
// again on its current one, by itself: a coordinator that died or gave up
// cannot leave the cluster paused. The coordinator itself sends ROLLBACK at
// the deadline (or on `crawler cluster abort`), and never commits after
// the deadline (handoff.Step), so the grace only has to cover a COMMIT
// decided just before the deadline and still on its way.

// SelfRollbackGrace is how long after a change's deadline a member that is
// still prepared rolls back by itself.
var SelfRollbackGrace = 5 * time.Second

// deadlineCheckEvery is how often the member checks the deadline.
var deadlineCheckEvery = 250 * time.Millisecond

// rollback drops the pending view v (its epoch) if this member is prepared
// for it and has not committed to it: the member goes back to the phase it
// had before PREPARE. Idempotent; refused once the member committed to v.
func (m *Member) rollback(v hostsplit.View, why string) error {
	m.el.commitMu.Lock()
	defer m.el.commitMu.Unlock()
	if cur := m.Split.Ownership().Epoch(); cur >= v.Epoch {
		if cur == v.Epoch {
			return fmt.Errorf("%w: this node has committed to epoch %d", handoff.ErrCommitted, v.Epoch)
		}
		return nil // an old change: nothing pending for it
	}
	m.el.mu.Lock()
	pending, prev := m.el.pending, m.el.prevPhase
	m.el.mu.Unlock()
	if pending == nil || pending.Epoch != v.Epoch {
		return nil // not prepared for it (or rolled back already)
	}
	if prev == "" || prev == PhasePrepared || prev == PhaseCommitted {
		prev = PhaseRunning
	}
	m.Split.Ownership().Unexpect()
	m.Node.opts.Logger.Warn("crawl: membership change rolled back", "epoch", v.Epoch, "why", why, "fetching_on_epoch", m.Split.Ownership().Epoch())
	return m.setPhaseDeadline(prev, nil, time.Time{}, "")
}

// deadlineLoop rolls the member back once a pending change is
// SelfRollbackGrace past its deadline. It runs until stop is closed.
func (m *Member) deadlineLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(deadlineCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		m.el.mu.Lock()
		pending, deadline := m.el.pending, m.el.deadline
		m.el.mu.Unlock()
		if pending == nil || deadline.IsZero() || time.Now().Before(deadline.Add(SelfRollbackGrace)) {
			continue
		}
		if m.rollForward(*pending) {
			continue
		}
		if err := m.rollback(*pending, fmt.Sprintf("deadline %s passed without a COMMIT", deadline.UTC().Format(time.RFC3339))); err != nil {
			m.Node.opts.Logger.Warn("crawl: self-rollback failed", "epoch", pending.Epoch, "err", err)
		}
	}
}

// ChangeRecords is implemented by a Control that can read the control
// plane's change record (coord.Session): a member past its deadline asks
// it before rolling back by itself.
type ChangeRecords interface {
	Current(ctx context.Context) (handoff.Record, bool, error)
}

// rollForward is asked, with a Control that implements ChangeRecords,
// before a self-rollback of pending: if the control plane recorded the
// change's COMMIT, the member commits pending itself (and resumes once the
// record says every hand-off was applied) instead of rolling back. It
// reports true when the member must not roll back: the change committed,
// or the record could not be read (a member that cannot reach the control
// plane is fenced anyway; guessing "not committed" could undo a commit).
func (m *Member) rollForward(pending hostsplit.View) bool {
	cr, ok := m.ctl.(ChangeRecords)
	if m.ctl == nil || !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, found, err := cr.Current(ctx)
	if err != nil {
		m.Node.opts.Logger.Warn("crawl: past the change deadline, the change record is unreadable: not rolling back yet", "epoch", pending.Epoch, "err", err)
		return true
	}
	if !found || r.New.Epoch != pending.Epoch {
		return false
	}
	switch r.Phase {
	case handoff.PhaseCommitting, handoff.PhaseResuming, handoff.PhaseDone:
	default:
		return false
	}
	m.Node.opts.Logger.Info("crawl: past the change deadline, but the control plane has the change: committing, not rolling back", "epoch", pending.Epoch, "change", r.ID, "phase", r.Phase)
	if err := m.commit(ctx, r.New, r.Lost); err != nil {
		m.Node.opts.Logger.Warn("crawl: rolling a change forward failed", "change", r.ID, "err", err)
		return true
	}
	if r.Phase != handoff.PhaseCommitting {
		if err := m.resume(r.New); err != nil {
			m.Node.opts.Logger.Warn("crawl: resuming after a change failed", "change", r.ID, "err", err)
		}
	}
	return true
}

// peerCert returns the verified client certificate of the caller.
func peerCert(ctx context.Context) (*x509.Certificate, error) {
	pr, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "crawl: no peer information")
	}
	ti, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.PeerCertificates) == 0 {
		return nil, status.Error(codes.Unauthenticated, "crawl: a cluster client certificate is required")
	}
	return ti.State.PeerCertificates[0], nil
}

// auth admits a member of the view (not a removed one) or an operator.
func (s *membershipServer) auth(ctx context.Context) error {
	cert, err := peerCert(ctx)
	if err != nil {
		return err
	}
	if tlsutil.IsOperator(cert) {
		return nil
	}
	id, err := tlsutil.ID(cert)
	if err != nil || !s.m.Split.Ownership().Known(hostsplit.NodeID(id)) {
		return status.Errorf(codes.PermissionDenied, "crawl: %q is not a cluster member", cert.Subject.CommonName)
	}
	return nil
}

// authOperator admits only an operator certificate and returns its name:
// membership changes need the operator role, a member's certificate does
// not suffice.
func (s *membershipServer) authOperator(ctx context.Context) (string, error) {
	cert, err := peerCert(ctx)
	if err != nil {
		return "", err
	}
	name, err := tlsutil.OperatorName(cert)
	if err != nil {
		return "", status.Errorf(codes.PermissionDenied,
			"crawl: %q may not change membership: an operator certificate is required ('crawler certs --operator NAME')", cert.Subject.CommonName)
	}
	return "operator " + name, nil
}

// operatorMethods are what an operator certificate may call on a member:
// the Membership service (GetView with_status carries the Peer status the
// coordinator polls). Batches (Peer) and every other service need a member.
var operatorMethods = map[string]bool{
	pb.Membership_GetView_FullMethodName:    true,
	pb.Membership_Transition_FullMethodName: true,
	// The operator's control service (internal/control), which admits
	// only operators.
	pb.Control_Seed_FullMethodName:   true,
	pb.Control_Rule_FullMethodName:   true,
	pb.Control_Drain_FullMethodName:  true,
	pb.Control_Status_FullMethodName: true,
}

func operatorGate(ctx context.Context, method string) error {
	cert, err := peerCert(ctx)
	if err != nil || !tlsutil.IsOperator(cert) || operatorMethods[method] {
		return nil // not an operator: the service's own checks apply
	}
	return status.Errorf(codes.PermissionDenied, "crawl: an operator certificate may not call %s", method)
}

// operatorGateOptions keep operator certificates (accepted by the TLS
// handshake) to operatorMethods.
func operatorGateOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := operatorGate(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := operatorGate(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}
}

func nodeIDStrings(ids []hostsplit.NodeID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// isRemovedRefusal reports whether a Transition error says a node id was
// removed (PermissionDenied naming hostsplit.ErrRemovedID).
func isRemovedRefusal(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.PermissionDenied && strings.Contains(st.Message(), hostsplit.ErrRemovedID.Error())
}

// removedDone reports whether a change removed this member and is done.
func (m *Member) removedDone() bool {
	m.el.mu.Lock()
	defer m.el.mu.Unlock()
	return m.el.phase == PhaseRemoved && m.el.pending == nil
}
