package control

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
)

// Register registers the Control service of c on s (the node's mTLS gRPC
// server).
func (c *Controller) Register(s grpc.ServiceRegistrar) { pb.RegisterControlServer(s, &server{c: c}) }

type server struct {
	pb.UnimplementedControlServer
	c *Controller
}

// operator admits only an operator certificate and returns "operator
// NAME": a member's certificate does not suffice.
func operator(ctx context.Context) (string, error) {
	pr, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return "", status.Error(codes.Unauthenticated, "control: no peer information")
	}
	ti, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.PeerCertificates) == 0 {
		return "", status.Error(codes.Unauthenticated, "control: an operator client certificate is required")
	}
	cert := ti.State.PeerCertificates[0]
	name, err := tlsutil.OperatorName(cert)
	if err != nil {
		return "", status.Errorf(codes.PermissionDenied,
			"control: %q may not use the control API: an operator certificate is required ('crawler certs --operator NAME')", cert.Subject.CommonName)
	}
	return "operator " + name, nil
}

// grpcErr maps the package's errors to status codes.
func grpcErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalidChange), errors.Is(err, frontier.ErrInvalidRule):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrNotAttached):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, ErrTerminated):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

func (s *server) Seed(ctx context.Context, req *pb.ControlSeedRequest) (*pb.ControlSeedResponse, error) {
	who, err := operator(ctx)
	if err != nil {
		return nil, err
	}
	n, probs, err := s.c.Seed(ctx, who, req.GetUrls())
	if err != nil {
		return nil, grpcErr(err)
	}
	resp := &pb.ControlSeedResponse{Accepted: uint64(n), Rejected: uint64(len(req.GetUrls()) - n)}
	for _, p := range probs {
		resp.Problems = append(resp.Problems, p.String())
	}
	return resp, nil
}

func (s *server) Rule(ctx context.Context, req *pb.ControlRuleRequest) (*pb.ControlStatus, error) {
	who, err := operator(ctx)
	if err != nil {
		return nil, err
	}
	ch := Change{Action: req.GetAction(), Match: frontier.Match{Host: req.GetHost(), Domain: req.GetDomain()},
		Override: frontier.Override{Delay: time.Duration(req.GetDelayNs()), Factor: req.GetFactor(), FactorSet: req.GetFactorSet(),
			MaxPages: int(req.GetMaxPages())}, Clear: req.GetClear()}
	if err := s.c.Change(ctx, who, ch); err != nil {
		return nil, grpcErr(err)
	}
	return s.status()
}

func (s *server) Drain(ctx context.Context, _ *pb.ControlDrainRequest) (*pb.ControlStatus, error) {
	who, err := operator(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.status()
	if err != nil {
		return nil, err
	}
	s.c.Drain(who)
	st.Draining = true
	return st, nil
}

func (s *server) Status(ctx context.Context, _ *pb.ControlStatusRequest) (*pb.ControlStatus, error) {
	if _, err := operator(ctx); err != nil {
		return nil, err
	}
	return s.status()
}

func (s *server) status() (*pb.ControlStatus, error) {
	st, err := s.c.Status()
	if err != nil {
		return nil, grpcErr(err)
	}
	return StatusToProto(st), nil
}

// StatusToProto is st on the wire.
func StatusToProto(st Status) *pb.ControlStatus {
	rules, _ := json.Marshal(st.Rules)
	m := st.Metrics
	return &pb.ControlStatus{Node: st.Node, Fetched: st.Fetched, Queued: st.Queued, InFlight: st.InFlight, RulesJson: rules,
		HeldPaused: m.HeldPaused, HeldBlocked: m.HeldBlocked, Draining: m.Draining, Changes: m.Changes, Seeded: m.Seeded}
}

// StatusFromProto is the inverse of StatusToProto (the metrics it does
// not carry are zero).
func StatusFromProto(p *pb.ControlStatus) (Status, error) {
	st := Status{Node: p.GetNode(), Fetched: p.GetFetched(), Queued: p.GetQueued(), InFlight: p.GetInFlight(),
		Metrics: Metrics{HeldPaused: p.GetHeldPaused(), HeldBlocked: p.GetHeldBlocked(), Draining: p.GetDraining(),
			Changes: p.GetChanges(), Seeded: p.GetSeeded()}}
	if len(p.GetRulesJson()) > 0 {
		if err := json.Unmarshal(p.GetRulesJson(), &st.Rules); err != nil {
			return st, err
		}
	}
	st.Metrics.PauseRules, st.Metrics.BlockRules, st.Metrics.Overrides = len(st.Rules.Paused), len(st.Rules.Blocked), len(st.Rules.Overrides)
	st.Metrics.PausedAll = st.Rules.PausedAll()
	return st, nil
}
