package crawl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// ChangeOptions configure ChangeMembership.
type ChangeOptions struct {
	// TLS is the caller's identity: an operator certificate (`crawler certs
	// --operator NAME`); members refuse a change asked with a member's.
	TLS *tlsutil.Node
	// Old is the view the cluster is on (GetView of any member); New the
	// view to change to, with Epoch Old.Epoch+1 (0 fills it in).
	Old, New hostsplit.View
	// Lost are members of Old gone with their disk: they are not
	// contacted, the batches spooled for them are re-routed, and the
	// members that gain their hosts crawl them again from their seeds.
	Lost []hostsplit.NodeID
	// Poll is the status polling interval; default 100 ms.
	Poll time.Duration
	// Timeout bounds the change until its commit: a change not committed
	// by then rolls back (members resume on Old). Default: three quarters
	// of the time left on ctx, or 10 minutes if ctx has no deadline (the
	// rest is left for the rollback).
	Timeout time.Duration
	// Store records the change (handoff.Store: etcd in internal/coord).
	// Nil: a handoff.MemStore in this process, on Old (the gRPC-only path).
	Store handoff.Store
	// Removed are node ids removed from the cluster for good (the members'
	// MemberState.removed): a New naming one is refused (handoff.ErrRemoved).
	Removed []hostsplit.NodeID
	// ID names the change; default random.
	ID          string
	DialOptions []grpc.DialOption
	// Logger reports progress; it may be called from several goroutines.
	// Default: discard (see internal/logging).
	Logger *slog.Logger
}

// ChangeReport is what a membership change did.
type ChangeReport struct {
	Epoch              uint64
	Prepare, Commit    time.Duration // PREPARE until drained; COMMIT until every hand-off applied
	Total              time.Duration // first PREPARE to last RESUME
	HandoffHosts       int           // hosts whose owner changed that had queued or fetched URLs
	HandoffQueued      int           // queued URLs moved
	HandoffSeen        int           // fetched URLs moved as seen-only entries
	HandoffBatches     uint64
	HandoffWireBytes   uint64
	HandoffRawBytes    uint64            // URL bytes handed over, before coding
	Members            []*pb.MemberState // every contacted node's state after RESUME
	MaxHandoff         time.Duration     // the slowest node's hand-off (inside COMMIT)
	ParticipatingNodes int
}

// MemberStates asks each member for its membership state, with tn as the
// caller's identity. A member with an empty ID may be any node whose
// certificate the cluster CA signed (the first contact of a command that
// knows only an address).
func MemberStates(ctx context.Context, tn *tlsutil.Node, members []hostsplit.Member) ([]*pb.MemberState, error) {
	var out []*pb.MemberState
	var errs []error
	for _, m := range members {
		cfg := tn.ClientConfig(nil)
		cfg.VerifyConnection = knownVerifier(func(id hostsplit.NodeID) bool { return id == m.ID })
		cfg.ServerName = string(m.ID)
		if m.ID == "" {
			// No name to check: verify the chain to the cluster CA by hand.
			cfg.InsecureSkipVerify = true
			cfg.VerifyConnection = func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 {
					return errors.New("crawl: no server certificate")
				}
				inter := x509.NewCertPool()
				for _, c := range cs.PeerCertificates[1:] {
					inter.AddCert(c)
				}
				_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: tn.Pool, Intermediates: inter,
					KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
				return err
			}
		}
		c, err := grpc.NewClient(m.Addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := pb.NewMembershipClient(c).GetView(cctx, &pb.GetViewRequest{})
		cancel()
		c.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.ID, err))
			continue
		}
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}
