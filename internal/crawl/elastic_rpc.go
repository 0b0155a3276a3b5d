package crawl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
)

// knownVerifier accepts a TLS peer signed by the cluster CA (checked by the
// handshake) whose node id known(id) accepts: the membership changes, so
// the set is consulted at each handshake.
func knownVerifier(known func(hostsplit.NodeID) bool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
			return errors.New("crawl: peer certificate not verified")
		}
		if tlsutil.IsOperator(cs.PeerCertificates[0]) {
			return nil // the services decide what an operator may call (operatorGate)
		}
		id, err := tlsutil.ID(cs.PeerCertificates[0])
		if err != nil {
			return err
		}
		if !known(hostsplit.NodeID(id)) {
			return fmt.Errorf("%w: %q", tlsutil.ErrNotMember, id)
		}
		return nil
	}
}

// membershipServer serves the Membership service of one member.
type membershipServer struct {
	pb.UnimplementedMembershipServer
	m *Member
}

// State returns the member's membership state.
func (m *Member) State() *pb.MemberState {
	m.el.mu.Lock()
	phase, pending, h, deadline := m.el.phase, m.el.pending, m.el.handoff, m.el.deadline
	m.el.mu.Unlock()
	st := &pb.MemberState{NodeId: string(m.self), View: hostsplit.ViewToProto(m.Split.Ownership().View()), Phase: phase,
		Removed: nodeIDStrings(m.Split.Ownership().Removed()), PendingDeadlineUnixNano: unixNano(deadline),
		Handoff: &pb.Handoff{Epoch: h.Epoch, Done: h.Done, Hosts: uint64(h.Hosts), QueuedUrls: uint64(h.QueuedURLs),
			SeenUrls: uint64(h.SeenURLs), Batches: h.Batches, WireBytes: h.WireBytes, DurationNs: int64(h.Duration),
			RawBytes: h.RawBytes}}
	if pending != nil {
		st.PendingEpoch = pending.Epoch
	}
	return st
}

func (s *membershipServer) GetView(ctx context.Context, r *pb.GetViewRequest) (*pb.MemberState, error) {
	if err := s.auth(ctx); err != nil {
		return nil, err
	}
	st := s.m.State()
	if r.GetWithStatus() {
		st.Status = hostsplit.NodeStatusToProto(s.m.Split.Transport().LocalStatus())
	}
	return st, nil
}

func (s *membershipServer) Transition(ctx context.Context, r *pb.TransitionRequest) (*pb.MemberState, error) {
	op, err := s.authOperator(ctx)
	if err != nil {
		return nil, err
	}
	if id := r.GetChangeId(); id != "" {
		op += " (change " + id + ")"
	}
	v := hostsplit.ViewFromProto(r.GetView())
	var lost []hostsplit.NodeID
	for _, id := range r.GetLost() {
		lost = append(lost, hostsplit.NodeID(id))
	}
	switch r.GetPhase() {
	case pb.TransitionRequest_PHASE_PREPARE:
		var deadline time.Time
		if d := r.GetDeadlineUnixNano(); d != 0 {
			deadline = time.Unix(0, d)
		}
		err = s.m.prepare(ctx, v, deadline)
	case pb.TransitionRequest_PHASE_ROLLBACK:
		err = s.m.rollback(v, "ROLLBACK from "+op)
	case pb.TransitionRequest_PHASE_COMMIT:
		err = s.m.commit(ctx, v, lost)
	case pb.TransitionRequest_PHASE_RESUME:
		err = s.m.resume(v)
	default:
		return nil, status.Errorf(codes.InvalidArgument, "crawl: unknown phase %v", r.GetPhase())
	}
	if err != nil {
		code := codes.FailedPrecondition
		if errors.Is(err, hostsplit.ErrBadView) {
			code = codes.InvalidArgument
		}
		if errors.Is(err, hostsplit.ErrRemovedID) {
			code = codes.PermissionDenied
		}
		return nil, status.Errorf(code, "%s: %v", r.GetPhase(), err)
	}
	return s.m.State(), nil
}

// ErrNoView reports a crawl-log entry whose epoch is not among the views
// given to ForeignFetches (or that has none: not written by a member).
var ErrNoView = errors.New("crawl: no view for the crawl-log entry's epoch")

// ForeignFetches audits crawl logs against the membership history: it
// returns the entries where a node fetched a URL of a host that it did not
// own in the view of the entry's epoch (LogEntry.Epoch). views must hold
// every view the crawl went through; an entry with no epoch or an unknown
// one is an ErrNoView. Robots.txt lines count as fetches of their host.
func ForeignFetches(entries []LogEntry, views ...hostsplit.View) ([]LogEntry, error) {
	rings := map[uint64]*hostsplit.Ring{}
	for _, v := range views {
		r, err := hostsplit.NewRing(v.IDs(), false)
		if err != nil {
			return nil, fmt.Errorf("crawl: view of epoch %d: %w", v.Epoch, err)
		}
		rings[v.Epoch] = r
	}
	var foreign []LogEntry
	for _, e := range entries {
		r := rings[e.Epoch]
		if r == nil {
			return foreign, fmt.Errorf("%w: %s fetched %s under epoch %d", ErrNoView, e.Node, e.URL, e.Epoch)
		}
		h, ok := hostsplit.Host(e.URL)
		if !ok {
			continue // not a fetchable URL: nothing was requested
		}
		if string(r.Owner(h)) != e.Node {
			foreign = append(foreign, e)
		}
	}
	return foreign, nil
}
