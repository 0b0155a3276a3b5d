package crawl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
)

// ChangeOptions configure ChangeMembership.
type ChangeOptions struct {
	// TLS is the caller's identity: the certificate of any member of the
	// old or the new view (from `crawler certs`).
	TLS *tlsutil.Node
	// Old is the view the cluster is on (GetView of any member); New the
	// view to change to, with Epoch Old.Epoch+1 (0 fills it in).
	Old, New hostsplit.View
	// Lost are members of Old gone with their disk: they are not
	// contacted, the batches spooled for them are re-routed, and the
	// members that gain their hosts crawl them again from their seeds.
	Lost []hostsplit.NodeID
	// Poll is the status polling interval; default 100 ms.
	Poll        time.Duration
	DialOptions []grpc.DialOption
	// Logf reports progress. Default: discard.
	Logf func(format string, args ...any)
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

// ChangeMembership moves a running cluster from o.Old to o.New: PREPARE on
// every node of both views (not Lost), wait until drained, COMMIT (each
// node adopts New and hands over the hosts it no longer owns), wait until
// every hand-off is applied, RESUME (see elastic.go). Every step is
// idempotent and retried while ctx lasts, so nodes may restart during the
// change; if ChangeMembership fails, run it again with the same views.
func ChangeMembership(ctx context.Context, o ChangeOptions) (ChangeReport, error) {
	var rep ChangeReport
	if o.TLS == nil {
		return rep, fmt.Errorf("%w: ChangeOptions.TLS is required", ErrInvalidOptions)
	}
	if o.New.Epoch == 0 {
		o.New.Epoch = o.Old.Epoch + 1
	}
	if o.New.Epoch <= o.Old.Epoch {
		return rep, fmt.Errorf("%w: new epoch %d not after %d", hostsplit.ErrStaleView, o.New.Epoch, o.Old.Epoch)
	}
	if o.Poll == 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	// Transitions run in parallel: one call to the caller's Logf at a time.
	var logMu sync.Mutex
	logf := o.Logf
	o.Logf = func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		logf(format, args...)
	}
	rep.Epoch = o.New.Epoch
	// Participants: both views' members, the lost ones aside.
	var parts []hostsplit.Member
	for _, m := range append(slices.Clone(o.New.Members), o.Old.Members...) {
		if slices.Contains(o.Lost, m.ID) || slices.ContainsFunc(parts, func(p hostsplit.Member) bool { return p.ID == m.ID }) {
			continue
		}
		parts = append(parts, m)
	}
	rep.ParticipatingNodes = len(parts)
	conns := make([]*grpc.ClientConn, len(parts))
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	ids := make([]hostsplit.NodeID, len(parts))
	for i, p := range parts {
		ids[i] = p.ID
	}
	known := func(id hostsplit.NodeID) bool { return slices.Contains(ids, id) }
	for i, p := range parts {
		cfg := o.TLS.ClientConfig(nil)
		cfg.VerifyConnection = knownVerifier(known)
		cfg.ServerName = string(p.ID)
		c, err := grpc.NewClient(p.Addr, append([]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}, o.DialOptions...)...)
		if err != nil {
			return rep, fmt.Errorf("crawl: dial %s: %w", p.ID, err)
		}
		conns[i] = c
	}
	lost := make([]string, len(o.Lost))
	for i, id := range o.Lost {
		lost[i] = string(id)
	}
	view := hostsplit.ViewToProto(o.New)
	// transition sends phase to every participant at once: a PREPARE
	// returns when the node's workers have stopped, so one slow node
	// (fetches finishing) would otherwise delay the pause of the next.
	transition := func(phase pb.TransitionRequest_Phase) ([]*pb.MemberState, error) {
		out := make([]*pb.MemberState, len(parts))
		errs := make([]error, len(parts))
		var wg sync.WaitGroup
		for i := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
					st, err := pb.NewMembershipClient(conns[i]).Transition(cctx, &pb.TransitionRequest{Phase: phase, View: view, Lost: lost})
					cancel()
					if err == nil {
						out[i] = st
						return
					}
					o.Logf("%s on %s: %v (retrying)", phase, parts[i].ID, err)
					select {
					case <-ctx.Done():
						errs[i] = fmt.Errorf("crawl: %s on %s: %w", phase, parts[i].ID, errors.Join(err, ctx.Err()))
						return
					case <-time.After(5 * o.Poll):
					}
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return out, nil
	}
	statusRound := func() ([]hostsplit.NodeStatus, error) {
		out := make([]hostsplit.NodeStatus, len(parts))
		for i := range parts {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			r, err := pb.NewPeerClient(conns[i]).Status(cctx, &pb.StatusRequest{})
			cancel()
			if err != nil {
				return nil, fmt.Errorf("status of %s: %w", parts[i].ID, err)
			}
			ns := hostsplit.NodeStatusFromProto(r)
			// Batches for lost members are re-routed at COMMIT; until
			// then they cannot be acknowledged.
			ns.Channels = slices.DeleteFunc(ns.Channels, func(c hostsplit.Channel) bool { return slices.Contains(o.Lost, c.Peer) })
			out[i] = ns
		}
		return out, nil
	}
	// waitDrained polls until two consecutive rounds are Drained (and, if
	// epoch > 0, every node is on epoch), re-sending phase now and then
	// for nodes that restarted.
	waitDrained := func(phase pb.TransitionRequest_Phase, epoch uint64) error {
		last := time.Now()
		var why error
		for {
			select {
			case <-ctx.Done():
				return fmt.Errorf("crawl: waiting for the cluster to drain after %s: %w (last: %v)", phase, ctx.Err(), why)
			case <-time.After(o.Poll):
			}
			r1, err := statusRound()
			if err == nil {
				var r2 []hostsplit.NodeStatus
				if r2, err = statusRound(); err == nil {
					err = hostsplit.Drained(r1, r2)
					for _, ns := range r2 {
						if err == nil && epoch > 0 && ns.Epoch != epoch {
							err = fmt.Errorf("%s is on epoch %d", ns.Node, ns.Epoch)
						}
					}
				}
			}
			if err == nil {
				return nil
			}
			why = err
			if time.Since(last) > 20*o.Poll {
				o.Logf("waiting after %s: %v", phase, err)
				if _, err := transition(phase); err != nil {
					return err
				}
				last = time.Now()
			}
		}
	}
	start := time.Now()
	// A re-run after every node committed (RESUME started: only RESUME is
	// left to do, and PREPARE would not pause a node that resumed).
	committed := true
	for i := range parts {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := pb.NewMembershipClient(conns[i]).GetView(cctx, &pb.GetViewRequest{})
		cancel()
		if err != nil || st.GetView().GetEpoch() != o.New.Epoch {
			committed = false
			break
		}
	}
	if committed {
		o.Logf("epoch %d: every node has committed already; RESUME", o.New.Epoch)
		states, err := transition(pb.TransitionRequest_PHASE_RESUME)
		rep.Members, rep.Total = states, time.Since(start)
		return rep, err
	}
	o.Logf("epoch %d: PREPARE on %d nodes", o.New.Epoch, len(parts))
	if _, err := transition(pb.TransitionRequest_PHASE_PREPARE); err != nil {
		return rep, err
	}
	if err := waitDrained(pb.TransitionRequest_PHASE_PREPARE, 0); err != nil {
		return rep, err
	}
	rep.Prepare = time.Since(start)
	cstart := time.Now()
	o.Logf("epoch %d: drained after %v; COMMIT", o.New.Epoch, rep.Prepare.Round(time.Millisecond))
	if _, err := transition(pb.TransitionRequest_PHASE_COMMIT); err != nil {
		return rep, err
	}
	if err := waitDrained(pb.TransitionRequest_PHASE_COMMIT, o.New.Epoch); err != nil {
		return rep, err
	}
	rep.Commit = time.Since(cstart)
	o.Logf("epoch %d: hand-offs applied after %v; RESUME", o.New.Epoch, rep.Commit.Round(time.Millisecond))
	states, err := transition(pb.TransitionRequest_PHASE_RESUME)
	if err != nil {
		return rep, err
	}
	rep.Total = time.Since(start)
	rep.Members = states
	for _, st := range states {
		h := st.GetHandoff()
		if h.GetEpoch() != o.New.Epoch {
			continue
		}
		rep.HandoffHosts += int(h.GetHosts())
		rep.HandoffQueued += int(h.GetQueuedUrls())
		rep.HandoffSeen += int(h.GetSeenUrls())
		rep.HandoffBatches += h.GetBatches()
		rep.HandoffWireBytes += h.GetWireBytes()
		rep.HandoffRawBytes += h.GetRawBytes()
		rep.MaxHandoff = max(rep.MaxHandoff, time.Duration(h.GetDurationNs()))
	}
	return rep, nil
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
