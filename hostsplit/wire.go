package hostsplit

import pb "github.com/sextant-crawler/sextant/proto"

// The conversions between hostsplit's types and their wire forms: the
// views, statuses and batch kinds of the rest of the package know nothing
// of proto.

// ViewToProto and ViewFromProto convert views for the Membership service.
func ViewToProto(v View) *pb.View {
	out := &pb.View{Epoch: v.Epoch}
	for _, m := range v.Members {
		out.Members = append(out.Members, &pb.ViewMember{Id: string(m.ID), Addr: m.Addr})
	}
	return out
}

func ViewFromProto(p *pb.View) View {
	v := View{Epoch: p.GetEpoch()}
	for _, m := range p.GetMembers() {
		v.Members = append(v.Members, Member{ID: NodeID(m.GetId()), Addr: m.GetAddr()})
	}
	return v
}

// NodeStatusFromProto converts a Status answer (for callers outside the
// cluster, such as `crawler cluster`).
func NodeStatusFromProto(r *pb.StatusResponse) NodeStatus { return statusFromProto(r) }

// NodeStatusToProto converts a NodeStatus to its wire form (what Peer/Status
// returns).
func NodeStatusToProto(ns NodeStatus) *pb.StatusResponse { return ns.toProto() }

// kindToProto and kindFromProto convert batch kinds; the values agree.
func kindToProto(k Kind) pb.BatchKind { return pb.BatchKind(k) }

func kindFromProto(k pb.BatchKind) Kind { return Kind(k) }

func (ns NodeStatus) toProto() *pb.StatusResponse {
	t := ns.Stats.Total
	r := &pb.StatusResponse{
		NodeId: string(ns.Node), Idle: ns.Idle, FrontierSize: ns.FrontierSize, InFlight: ns.InFlight,
		BufferedUrls: ns.BufferedURLs, DiscoveredLocal: ns.Stats.DiscoveredLocal,
		DiscoveredRemote: ns.Stats.DiscoveredRemote, SuppressedByCache: t.Suppressed, RejectedMalformed: t.Malformed,
		MembershipEpoch: ns.Epoch, Paused: ns.Paused, Phase: ns.Phase, ResendToken: ns.ResendToken,
	}
	peerStats := map[NodeID]PeerStats{}
	for _, ps := range ns.Stats.Peers {
		peerStats[ps.Peer] = ps
	}
	for _, c := range ns.Channels {
		ps := peerStats[c.Peer]
		r.Peers = append(r.Peers, &pb.PeerCounters{
			PeerId: string(c.Peer), OutEpoch: c.OutEpoch, SentSeq: c.SentSeq, AckedSeq: c.AckedSeq,
			SpoolBatches: c.SpoolBatches, SpoolUrls: c.SpoolURLs, InEpoch: c.InEpoch, AppliedSeq: c.AppliedSeq,
			SentUrls: ps.SentURLs, SentBatches: ps.SentBatches, WireBytes: ps.WireBytes,
			ReceivedUrls: ps.ReceivedURLs, ReceivedBatches: ps.ReceivedBatches, ResendServed: c.ResendServed,
		})
	}
	return r
}

func statusFromProto(r *pb.StatusResponse) NodeStatus {
	ns := NodeStatus{
		Node: NodeID(r.GetNodeId()), Idle: r.GetIdle(), FrontierSize: r.GetFrontierSize(),
		InFlight: r.GetInFlight(), BufferedURLs: r.GetBufferedUrls(),
		Epoch: r.GetMembershipEpoch(), Paused: r.GetPaused(), Phase: r.GetPhase(), ResendToken: r.GetResendToken(),
	}
	ns.Stats.Self = ns.Node
	ns.Stats.DiscoveredLocal = r.GetDiscoveredLocal()
	ns.Stats.DiscoveredRemote = r.GetDiscoveredRemote()
	ns.Stats.Total.Discovered = r.GetDiscoveredRemote()
	ns.Stats.Total.Suppressed = r.GetSuppressedByCache()
	ns.Stats.Total.Malformed = r.GetRejectedMalformed()
	for _, c := range r.GetPeers() {
		ns.Channels = append(ns.Channels, Channel{
			Peer: NodeID(c.GetPeerId()), OutEpoch: c.GetOutEpoch(), SentSeq: c.GetSentSeq(), AckedSeq: c.GetAckedSeq(),
			SpoolBatches: c.GetSpoolBatches(), SpoolURLs: c.GetSpoolUrls(), InEpoch: c.GetInEpoch(), AppliedSeq: c.GetAppliedSeq(),
			ResendServed: c.GetResendServed(),
		})
		t := &ns.Stats.Total
		t.SentURLs += c.GetSentUrls()
		t.SentBatches += c.GetSentBatches()
		t.WireBytes += c.GetWireBytes()
		t.ReceivedURLs += c.GetReceivedUrls()
		t.ReceivedBatches += c.GetReceivedBatches()
		t.SpoolBatches += c.GetSpoolBatches()
		t.SpoolURLs += c.GetSpoolUrls()
	}
	return ns
}
