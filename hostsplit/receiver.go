package hostsplit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	pb "github.com/sextant-crawler/sextant/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// KeepaliveTime is how often an idle connection to a peer is pinged, so a
// partitioned peer's stream fails and is retried instead of hanging.
const KeepaliveTime = 20 * time.Second

// ServerOptions are the gRPC server options a node's server should use with
// a Splitter: keepalive enforcement that tolerates the senders' pings, and a
// receive bound that fits the largest batch Limits allows.
func ServerOptions(lim Limits) []grpc.ServerOption {
	lim.EnsureDefaults()
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: KeepaliveTime / 2, PermitWithoutStream: true}),
		grpc.MaxRecvMsgSize(lim.MaxDecodedBytes + 64<<10),
	}
}

type server struct {
	pb.UnimplementedPeerServer
	t *Transport
}

// identity returns the node id of the caller from its verified client
// certificate, or "" when the connection is not TLS (allowed only with
// Options.Insecure).
func (t *Transport) identity(ctx context.Context) (NodeID, error) {
	pr, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return "", status.Error(codes.Unauthenticated, "hostsplit: no peer information")
	}
	ti, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok {
		if t.opts.Insecure {
			return "", nil
		}
		t.rejectedAuth.Add(1)
		return "", status.Error(codes.Unauthenticated, "hostsplit: TLS client certificate required")
	}
	if len(ti.State.VerifiedChains) == 0 || len(ti.State.PeerCertificates) == 0 {
		t.rejectedAuth.Add(1)
		return "", status.Error(codes.Unauthenticated, "hostsplit: client certificate not verified")
	}
	id := NodeID(ti.State.PeerCertificates[0].Subject.CommonName)
	if !t.own.Known(id) {
		t.rejectedAuth.Add(1)
		return "", status.Errorf(codes.PermissionDenied, "hostsplit: %q is not a cluster member", id)
	}
	return id, nil
}

// Send applies each batch in order, once per (sender, epoch, seq), and
// acknowledges it after the Local sink has durably accepted it.
func (srv *server) Send(stream grpc.BidiStreamingServer[pb.Batch, pb.Ack]) error {
	t := srv.t
	ctx := stream.Context()
	id, err := t.identity(ctx)
	if err != nil {
		return err
	}
	// A peer keeps its stream open while it has batches for this node, so
	// a graceful server stop would wait for it until its bound: the
	// stream ends at StopReceiving instead (between batches; the peer
	// resends what was not acknowledged). Recv runs in its own goroutine
	// so that the handler can return; returning ends the stream, which
	// ends that goroutine.
	type recvd struct {
		b   *pb.Batch
		err error
	}
	in := make(chan recvd)
	go func() {
		for {
			b, err := stream.Recv()
			select {
			case in <- recvd{b, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		var r recvd
		select {
		case r = <-in:
		case <-t.recvStop:
			return status.Error(codes.Unavailable, "hostsplit: node shutting down")
		}
		b, err := r.b, r.err
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		sender := NodeID(b.GetSender())
		if id != "" && sender != id {
			t.rejectedAuth.Add(1)
			return status.Errorf(codes.PermissionDenied, "hostsplit: batch from %q on a connection of %q", sender, id)
		}
		p, ok := t.peerByID(sender)
		if !ok {
			if t.own.Known(sender) {
				return status.Errorf(codes.Aborted, "hostsplit: %q is not yet in this node's membership view", sender)
			}
			t.rejectedAuth.Add(1)
			return status.Errorf(codes.PermissionDenied, "hostsplit: %q is not a peer", sender)
		}
		acked, err := t.apply(ctx, p, b)
		if err != nil {
			return err
		}
		if err := stream.Send(&pb.Ack{Epoch: b.GetEpoch(), AckedSeq: acked}); err != nil {
			return err
		}
	}
}

// apply delivers batch b from p unless it was applied before, and returns
// the highest contiguous seq applied for p's epoch. Each URL goes to its
// owner under this node's view: the Local sink, or (forwarded) the spool
// of its owner, before the batch counts as applied.
func (t *Transport) apply(ctx context.Context, p *peer, b *pb.Batch) (acked uint64, err error) {
	p.l.inMu.Lock()
	defer p.l.inMu.Unlock()
	err = t.spool.withStore(func(st *store) error {
		return t.node.underView(func(vs *viewState) error {
			acked, err = t.applyLocked(ctx, p, b, vs, st)
			return err
		})
	})
	if errors.Is(err, ErrClosed) {
		return 0, status.Error(codes.Unavailable, ErrClosed.Error())
	}
	return acked, err
}

// applyLocked is apply with p.l.inMu, the spool and the view held.
func (t *Transport) applyLocked(ctx context.Context, p *peer, b *pb.Batch, vs *viewState, st *store) (uint64, error) {
	if b.GetMembershipEpoch() > vs.v.Epoch {
		return 0, status.Errorf(codes.Aborted, "hostsplit: batch for membership epoch %d, this node is on %d", b.GetMembershipEpoch(), vs.v.Epoch)
	}
	// A coalesced message carries batches first..seq; first ≤ applied < seq
	// is a resend overlapping batches applied before: applying it again
	// is harmless (the sink takes repeats).
	first := b.GetFirstSeq()
	if first == 0 {
		first = b.GetSeq()
	}
	known := b.GetEpoch() == p.l.inEpoch
	if known && b.GetSeq() <= p.l.inApplied {
		p.st.dupBatches.Add(1)
		return p.l.inApplied, nil
	}
	kind := kindFromProto(b.GetKind())
	if b.GetSeq() == 0 || b.GetEpoch() == 0 || first > b.GetSeq() || (first != b.GetSeq() && kind != KindURLs) {
		p.st.malformed.Add(1)
		return 0, status.Errorf(codes.InvalidArgument, "%v: seq %d, first seq %d, epoch %d, kind %d", ErrMalformedBatch,
			b.GetSeq(), b.GetFirstSeq(), b.GetEpoch(), b.GetKind())
	}
	if known && first > p.l.inApplied+1 {
		return 0, status.Errorf(codes.FailedPrecondition, "hostsplit: batch %d from %s after %d: gap", first, p.id, p.l.inApplied)
	}
	urls, err := DecodeBatch(b.GetUrls(), t.opts.Limits)
	if err == nil && len(urls) != int(b.GetCount()) {
		err = errors.New("count does not match")
	}
	if err == nil && !kind.valid() {
		err = fmt.Errorf("unknown kind %d", kind)
	}
	if err != nil {
		p.st.malformed.Add(1)
		t.opts.Logger.Warn("hostsplit: rejected batch", "peer", p.id, "seq", b.GetSeq(), "err", err)
		return 0, status.Errorf(codes.InvalidArgument, "hostsplit: batch %d from %s: %v", b.GetSeq(), p.id, err)
	}
	source := "hs/" + string(p.id) + "/" + strconv.FormatUint(b.GetEpoch(), 16)
	forwarded, err := t.node.deliverReceived(ctx, vs, kind, urls, source, b.GetSeq())
	if forwarded {
		p.st.forwarded.Add(1)
	}
	if err != nil {
		return 0, status.Errorf(codes.Unavailable, "hostsplit: deliver: %v", err)
	}
	if err := st.setApplied(p.id, b.GetEpoch(), b.GetSeq()); err != nil {
		return 0, status.Error(codes.Unavailable, err.Error())
	}
	p.l.inStateMu.Lock()
	p.l.inEpoch, p.l.inApplied = b.GetEpoch(), b.GetSeq()
	p.l.inStateMu.Unlock()
	p.st.recvBatches.Add(1)
	p.st.recvURLs.Add(uint64(len(urls)))
	return p.l.inApplied, nil
}

// Status serves this node's counters.
func (srv *server) Status(ctx context.Context, _ *pb.StatusRequest) (*pb.StatusResponse, error) {
	if _, err := srv.t.identity(ctx); err != nil {
		return nil, err
	}
	srv.t.statusServed.Add(1)
	return srv.t.LocalStatus().toProto(), nil
}
