package hostsplit

import "time"

// PeerStats are the traffic counters for one peer (or, in Stats.Total, the
// sum over peers) since this Splitter was opened.
type PeerStats struct {
	Peer NodeID
	// Outbound.
	Discovered      uint64 // remote URLs routed to this peer
	Suppressed      uint64 // of those, hits in the peer's front cache
	TooLong         uint64 // dropped: longer than Limits.MaxURLLen
	BatchDups       uint64 // duplicates removed inside a batch
	SentURLs        uint64 // URLs in batches spooled for the peer
	SentBatches     uint64
	SpooledBytes    uint64 // encoded bytes of the batches spooled
	RawBytes        uint64 // the same URLs' raw bytes
	WireBytes       uint64 // encoded URL bytes of the messages sent (first transmission)
	WireMessages    uint64 // those messages; spooled batches are coalesced (CoalesceMaxAge)
	AckedBatches    uint64
	Transmitted     uint64 // messages put on a stream, resends included
	StreamErrors    uint64
	RejectedByPeer  uint64 // streams the peer ended as malformed
	SpoolBatches    uint64 // spooled, not yet acknowledged
	SpoolURLs       uint64
	BufferedURLs    uint64 // in memory, not yet spooled
	ReceivedBatches uint64 // Inbound: batches applied from the peer
	ReceivedURLs    uint64
	DupBatches      uint64 // resent batches ignored
	Malformed       uint64 // batches rejected as malformed
	// The last failure to reach the peer (a batch stream or a status
	// call; zero if none since this start): its cause as gRPC reported
	// it, its FailureKind and time; LastAckAt is the last answer (a batch
	// acknowledged, a status call answered). Failing: no answer since the
	// last failure. Not summed in Stats.Total.
	LastError     string
	LastErrorKind string
	LastErrorAt   time.Time
	LastAckAt     time.Time
	Failing       bool
}

// Stats is a snapshot of the splitter's counters.
type Stats struct {
	Self             NodeID
	DiscoveredLocal  uint64
	DiscoveredRemote uint64
	// RejectedAuth counts calls refused for want of a member's
	// certificate or for a batch claiming another sender.
	RejectedAuth uint64
	// SpoolSyncs counts the spool's synced writes of batches and applied
	// marks (one fsync each); StatusAsked the status calls this node made
	// to peers, StatusServed those it answered. Local: not on the wire.
	SpoolSyncs, StatusAsked, StatusServed uint64
	Total                                 PeerStats
	Peers                                 []PeerStats // in membership order
}

// TrafficReduction is 1 − sent ÷ discovered-remote: the share of
// cross-machine URLs the peer caches (and in-batch deduplication) saved.
func (s Stats) TrafficReduction() float64 {
	if s.DiscoveredRemote == 0 {
		return 0
	}
	return 1 - float64(s.Total.SentURLs)/float64(s.DiscoveredRemote)
}

// NumPeers is the number of peers this node sends to (itself excluded).
func (s Stats) NumPeers() int {
	n := 0
	for _, p := range s.Peers {
		if p.Peer != s.Self {
			n++
		}
	}
	return n
}

// LocalShare is the share of routed URLs owned by this node.
func (s Stats) LocalShare() float64 {
	n := s.DiscoveredLocal + s.DiscoveredRemote
	if n == 0 {
		return 0
	}
	return float64(s.DiscoveredLocal) / float64(n)
}

// WireRatio is wire bytes ÷ raw URL bytes of the batches spooled: exact
// once every batch spooled since this start has been sent.
func (s Stats) WireRatio() float64 {
	if s.Total.RawBytes == 0 {
		return 0
	}
	return float64(s.Total.WireBytes) / float64(s.Total.RawBytes)
}

// Stats returns a snapshot of the counters.
func (s *Splitter) Stats() Stats {
	out := Stats{Self: s.opts.Self, DiscoveredLocal: s.discoveredLocal.Load(), RejectedAuth: s.tr.rejectedAuth.Load(),
		SpoolSyncs: s.spool.st.syncs.Load(), StatusAsked: s.tr.statusAsked.Load(), StatusServed: s.tr.statusServed.Load()}
	for _, p := range s.tr.allPeers() {
		ps := p.stats()
		out.Peers = append(out.Peers, ps)
		t := &out.Total
		t.Discovered += ps.Discovered
		t.Suppressed += ps.Suppressed
		t.TooLong += ps.TooLong
		t.BatchDups += ps.BatchDups
		t.SentURLs += ps.SentURLs
		t.SentBatches += ps.SentBatches
		t.WireBytes += ps.WireBytes
		t.WireMessages += ps.WireMessages
		t.SpooledBytes += ps.SpooledBytes
		t.RawBytes += ps.RawBytes
		t.AckedBatches += ps.AckedBatches
		t.Transmitted += ps.Transmitted
		t.StreamErrors += ps.StreamErrors
		t.RejectedByPeer += ps.RejectedByPeer
		t.SpoolBatches += ps.SpoolBatches
		t.SpoolURLs += ps.SpoolURLs
		t.BufferedURLs += ps.BufferedURLs
		t.ReceivedBatches += ps.ReceivedBatches
		t.ReceivedURLs += ps.ReceivedURLs
		t.DupBatches += ps.DupBatches
		t.Malformed += ps.Malformed
	}
	out.DiscoveredRemote = out.Total.Discovered
	return out
}

func (p *peer) stats() PeerStats {
	ps := PeerStats{
		Peer:            p.id,
		Discovered:      p.st.discovered.Load(),
		Suppressed:      p.st.suppressed.Load(),
		TooLong:         p.st.tooLong.Load(),
		BatchDups:       p.st.batchDups.Load(),
		SentURLs:        p.st.sentURLs.Load(),
		SentBatches:     p.st.sentBatches.Load(),
		WireBytes:       p.st.wireBytes.Load(),
		WireMessages:    p.st.wireMessages.Load(),
		SpooledBytes:    p.st.spooledBytes.Load(),
		RawBytes:        p.st.rawBytes.Load(),
		AckedBatches:    p.st.ackedBatches.Load(),
		Transmitted:     p.st.transmitted.Load(),
		StreamErrors:    p.st.streamErrors.Load(),
		RejectedByPeer:  p.st.rejectedByPeer.Load(),
		ReceivedBatches: p.st.recvBatches.Load(),
		ReceivedURLs:    p.st.recvURLs.Load(),
		DupBatches:      p.st.dupBatches.Load(),
		Malformed:       p.st.malformed.Load(),
	}
	p.l.health.fill(&ps)
	p.q.mu.Lock()
	ps.SpoolBatches = uint64(len(p.q.pending))
	ps.SpoolURLs = uint64(p.q.pendingURLs)
	p.q.mu.Unlock()
	p.b.mu.Lock()
	ps.BufferedURLs = uint64(len(p.b.buf) + p.b.flushing)
	p.b.mu.Unlock()
	return ps
}
