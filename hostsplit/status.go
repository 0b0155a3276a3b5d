package hostsplit

import (
	"context"
	"errors"
	"fmt"

	pb "github.com/sextant-crawler/sextant/proto"
	"google.golang.org/grpc"
)

// Channel is one node's persisted counters about the channel to and from
// one other member: what it assigned to batches for the peer and what it
// applied from the peer. They survive restarts.
type Channel struct {
	Peer         NodeID
	OutEpoch     uint64 // this node's spool epoch
	SentSeq      uint64 // last seq spooled for Peer
	AckedSeq     uint64
	SpoolBatches uint64
	SpoolURLs    uint64
	InEpoch      uint64 // Peer's epoch of the last batch applied
	AppliedSeq   uint64 // last seq applied from Peer
	// ResendServed is Peer's resend token this node served: its archive
	// for Peer re-sent (see resend.go).
	ResendServed uint64
}

// NodeStatus is one node's report for the status page and termination
// detection.
type NodeStatus struct {
	Node NodeID
	// Idle: the crawl loop reported idle, no Route call was running and
	// no URL was buffered in memory.
	Idle         bool
	FrontierSize int64
	InFlight     int64
	BufferedURLs int64
	Channels     []Channel // one per peer: members in order, then former members
	Stats        Stats     // only the totals cross the wire (Peers is nil)
	// Epoch is the node's membership view; Paused and Phase as in
	// LocalStatus.
	Epoch  uint64
	Paused bool
	Phase  string
	// ResendToken, when not zero, asks every peer to re-send what it
	// archived for this node (RequestResend, resend.go).
	ResendToken uint64
}

// LocalStatus returns this node's status. The crawl loop's state is read
// first and the counters after, so a batch applied in between shows up as a
// counter change in the next round.
func (t *Transport) LocalStatus() NodeStatus {
	ls := LocalStatus{Idle: true}
	if t.opts.Status != nil {
		ls = t.opts.Status()
	}
	routing, stats := t.node.routeStatus()
	token, served, resending := t.node.resendStatus()
	ns := NodeStatus{Node: t.opts.Self, FrontierSize: ls.FrontierSize, InFlight: ls.InFlight, Stats: stats,
		Epoch: t.own.Epoch(), Phase: ls.Phase, ResendToken: token}
	for _, p := range t.allPeers() {
		c := Channel{Peer: p.id, OutEpoch: t.spool.epoch(), ResendServed: served[p.id]}
		p.q.mu.Lock()
		c.SentSeq, c.AckedSeq, c.SpoolBatches, c.SpoolURLs = p.q.lastSeq, p.q.acked, uint64(len(p.q.pending)), uint64(p.q.pendingURLs)
		p.q.mu.Unlock()
		p.l.inStateMu.Lock()
		c.InEpoch, c.AppliedSeq = p.l.inEpoch, p.l.inApplied
		p.l.inStateMu.Unlock()
		ns.Channels = append(ns.Channels, c)
	}
	ns.BufferedURLs = int64(ns.Stats.Total.BufferedURLs)
	// A resend token seen and not served: the batches it re-sends are not
	// spooled yet, so no counter shows them.
	ns.Idle = ls.Idle && routing == 0 && ns.BufferedURLs == 0 && !resending
	ns.Paused = ls.Paused && routing == 0 && ns.BufferedURLs == 0
	return ns
}

// PeerStatus asks one peer for its status (RPCTimeout applies).
func (t *Transport) PeerStatus(ctx context.Context, id NodeID) (NodeStatus, error) {
	if id == t.opts.Self {
		return t.LocalStatus(), nil
	}
	t.mu.RLock()
	p, ok := t.peers[id]
	var conn = (*grpc.ClientConn)(nil)
	if ok {
		conn = p.l.conn
	}
	t.mu.RUnlock()
	if conn == nil {
		return NodeStatus{}, fmt.Errorf("hostsplit: %q is not a member", id)
	}
	cctx, cancel := context.WithTimeout(ctx, t.opts.RPCTimeout)
	defer cancel()
	t.statusAsked.Add(1)
	r, err := pb.NewPeerClient(conn).Status(cctx, &pb.StatusRequest{})
	if err != nil {
		if ctx.Err() == nil { // not the caller giving up
			t.failed(p, "status", err, 0)
		}
		return NodeStatus{}, fmt.Errorf("hostsplit: status of %s: %w", id, err)
	}
	t.progressed(p)
	ns := statusFromProto(r)
	if ns.Node != id {
		return NodeStatus{}, fmt.Errorf("hostsplit: status of %s answered by %q", id, ns.Node)
	}
	// The peer was authenticated by mTLS (ClientTLS): its resend token
	// asks this node to re-send its archive for it.
	t.node.resendAsked(id, ns.ResendToken)
	return ns, nil
}

// ClusterStatus asks every member, this node included, for its status, in
// membership order. One unreachable member fails the whole round.
func (t *Transport) ClusterStatus(ctx context.Context) ([]NodeStatus, error) {
	v := t.own.View()
	out := make([]NodeStatus, 0, len(v.Members))
	for _, m := range v.Members {
		ns, err := t.PeerStatus(ctx, m.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, ns)
	}
	return out, nil
}

// Terminated runs two consecutive status rounds over the cluster and
// reports whether they prove the crawl over (see Quiescent). Any error means
// "not proven"; call it again later.
func (t *Transport) Terminated(ctx context.Context) (bool, error) {
	r1, err := t.ClusterStatus(ctx)
	if err != nil {
		return false, err
	}
	r2, err := t.ClusterStatus(ctx)
	if err != nil {
		return false, err
	}
	return Quiescent(r1, r2) == nil, nil
}

// ErrNotQuiescent is wrapped by Quiescent's reasons.
var ErrNotQuiescent = errors.New("hostsplit: cluster not quiescent")

// Quiescent checks two consecutive status rounds, the second begun after
// the first ended, for the four-counter termination rule applied per
// channel: it returns nil only if in both rounds every node is idle with
// nothing buffered or spooled, every channel A→B has B's applied seq equal
// to A's sent seq (same epoch), and no persisted counter changed between
// the rounds. Then at the instant between the rounds no batch was in
// flight and every node was idle, and an idle node only becomes busy by
// receiving a batch — which would have changed a counter. A node's resend
// token must also have been served by every other node (Channel.
// ResendServed): a peer that has not re-sent its archive yet may not
// have read the token, so its idleness proves nothing. Otherwise it
// returns an error wrapping ErrNotQuiescent naming the first reason.
func Quiescent(round1, round2 []NodeStatus) error {
	if len(round1) == 0 || len(round1) != len(round2) {
		return fmt.Errorf("%w: rounds of %d and %d nodes", ErrNotQuiescent, len(round1), len(round2))
	}
	for _, round := range [][]NodeStatus{round1, round2} {
		for _, ns := range round {
			if ns.Epoch != round[0].Epoch {
				return fmt.Errorf("%w: %s is on membership epoch %d, %s on %d", ErrNotQuiescent, ns.Node, ns.Epoch, round[0].Node, round[0].Epoch)
			}
		}
	}
	if err := settled(round1, round2, false); err != nil {
		return err
	}
	for _, round := range [][]NodeStatus{round1, round2} {
		if err := resendsServed(round); err != nil {
			return err
		}
	}
	return nil
}

// resendsServed checks that every node's resend token was served by every
// other node of the round.
func resendsServed(round []NodeStatus) error {
	for _, y := range round {
		if y.ResendToken == 0 {
			continue
		}
		for _, x := range round {
			if x.Node == y.Node {
				continue
			}
			if c, ok := channelFor(x, y.Node); !ok || c.ResendServed != y.ResendToken {
				return fmt.Errorf("%w: %s has not re-sent its archive for %s (repaired)", ErrNotQuiescent, x.Node, y.Node)
			}
		}
	}
	return nil
}

// Drained is Quiescent for a membership change: in both rounds every node
// is Paused (not fetching, nothing buffered) instead of idle — nodes may
// still hold queued URLs and be on different views — and every batch sent
// was applied. Then no URL is travelling between the nodes of the rounds.
func Drained(round1, round2 []NodeStatus) error {
	if len(round1) == 0 || len(round1) != len(round2) {
		return fmt.Errorf("%w: rounds of %d and %d nodes", ErrNotQuiescent, len(round1), len(round2))
	}
	return settled(round1, round2, true)
}

func settled(round1, round2 []NodeStatus, paused bool) error {
	for _, round := range [][]NodeStatus{round1, round2} {
		if err := quiet(round, paused); err != nil {
			return err
		}
	}
	for i := range round1 {
		a, b := round1[i], round2[i]
		if a.Node != b.Node || len(a.Channels) != len(b.Channels) {
			return fmt.Errorf("%w: membership differs between rounds", ErrNotQuiescent)
		}
		for j := range a.Channels {
			x, y := a.Channels[j], b.Channels[j]
			if x.Peer != y.Peer || x.OutEpoch != y.OutEpoch || x.SentSeq != y.SentSeq ||
				x.InEpoch != y.InEpoch || x.AppliedSeq != y.AppliedSeq {
				return fmt.Errorf("%w: %s counters for %s changed between rounds", ErrNotQuiescent, a.Node, x.Peer)
			}
		}
	}
	return nil
}

// quiet checks one round: all idle, nothing buffered or spooled, every
// channel's sent equals its receiver's applied.
func quiet(round []NodeStatus, paused bool) error {
	byNode := map[NodeID]NodeStatus{}
	for _, ns := range round {
		byNode[ns.Node] = ns
	}
	for _, ns := range round {
		if (!paused && !ns.Idle) || (paused && !ns.Paused) || ns.BufferedURLs != 0 {
			return fmt.Errorf("%w: %s busy", ErrNotQuiescent, ns.Node)
		}
		for _, c := range ns.Channels {
			if c.SpoolBatches != 0 || c.AckedSeq != c.SentSeq {
				return fmt.Errorf("%w: %s has batches for %s unacknowledged", ErrNotQuiescent, ns.Node, c.Peer)
			}
			if c.SentSeq == 0 {
				continue // nothing sent in this epoch
			}
			rcv, ok := byNode[c.Peer]
			if !ok {
				// A former member: every batch for it was acknowledged
				// or re-routed (checked above).
				continue
			}
			in, ok := channelFor(rcv, ns.Node)
			if !ok || in.InEpoch != c.OutEpoch || in.AppliedSeq != c.SentSeq {
				return fmt.Errorf("%w: %s sent %d to %s, which applied %d", ErrNotQuiescent, ns.Node, c.SentSeq, c.Peer, in.AppliedSeq)
			}
		}
	}
	return nil
}

func channelFor(ns NodeStatus, peer NodeID) (Channel, bool) {
	for _, c := range ns.Channels {
		if c.Peer == peer {
			return c, true
		}
	}
	return Channel{}, false
}
