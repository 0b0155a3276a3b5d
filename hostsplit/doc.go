// Package hostsplit routes each discovered URL to the node that owns its host.
//
// The owner is the rendezvous hash of the host (or registered domain) over the
// membership view (Ring), so a membership change moves only the hosts of the
// node that joined or left. Local URLs go to the Local sink (the crawl loop's
// front cache and DUE); remote URLs pass a per-peer front cache (hits are not
// sent: this is the cross-machine traffic the caching study saves), then go
// into front-coded batches (EncodeBatch) spooled on disk in pebble until the
// peer acknowledges them over a gRPC stream (proto.Peer/Send). The sender
// coalesces the URL batches waiting for a peer into one message, encoded
// together (Options.CoalesceMaxAge): durability comes from frequent small
// spooled batches, wire efficiency from large messages.
//
// # Parts
//
// A Splitter composes three parts, each with its own locks, reached through
// accessors:
//
//   - Ownership (Splitter.Ownership): the membership view the node acts on,
//     the owner of a host under it, the view expected next and the ids
//     retired for good. Free of wire types; wire.go converts.
//   - Spool (Splitter.Spool): the durable per-peer queues of outbound
//     batches in pebble, the archive of acknowledged ones, the applied
//     marks of inbound ones, the persisted view and a small metadata store.
//   - Transport (Splitter.Transport): the gRPC side. One sender per peer
//     streams its queue (coalescing batches into messages); the Peer service
//     applies what peers send and answers status calls, from which
//     Terminated detects the end of the crawl.
//
// The Splitter itself owns Route's per-peer front caches and batch buffers,
// and membership changes (SetView, hand-offs, re-routing), which touch all
// three parts.
//
// # Usage
//
//  1. Make a Splitter with New(Options). It opens the spool in DataDir and
//     starts one sender goroutine per peer, which resumes whatever the spool
//     holds from an earlier run.
//  2. Call Transport().Register on the gRPC server you own (with mTLS from
//     internal/tlsutil: ServerConfig requires member client certificates,
//     and ServerOptions gives the keepalive and size bounds), then serve it.
//  3. Call Route with the normalised URLs extracted from each page (a
//     fragment, which no normalised URL has, is the caller's annotation:
//     it travels with the URL but is not part of its fingerprint). Local
//     URLs are delivered before Route returns; remote URLs are durable only
//     once spooled (batch full, BatchMaxAge, or Flush). Call Flush before
//     recording a page as done if its links must survive a kill -9.
//  4. The Local sink must be durable when Deliver returns nil: a received
//     batch is acknowledged only then. It may see a URL twice after a crash
//     (the DUE deduplicates). Received batches are applied once per (sender,
//     epoch, seq); a resend is acknowledged without delivery, except a
//     coalesced message that overlaps batches applied before and reaches
//     beyond them: it is delivered whole.
//  5. For cluster-wide termination, supply Options.Status and poll
//     Transport().Terminated: it is true only after two status rounds in
//     which every node is idle, nothing is buffered or spooled, and every
//     channel's sent and applied sequence numbers agree and did not change
//     (Quiescent).
//  6. Membership changes (issue 10): the membership is an epoch-numbered
//     View, persisted in DataDir. SetView adopts a newer one: routing
//     follows its ring, senders start for new members, and batches spooled
//     for a member that left are re-routed to the new owners. Every batch
//     carries the sender's epoch and a Kind: a receiver on an older view
//     refuses it with codes.Aborted (the sender retries soon); a receiver on
//     the same or a newer view delivers what it owns and forwards the rest
//     (durably, before acknowledging), so nothing addressed under an old
//     view is dropped. SpoolHandoff sends a moved host's fetched URLs
//     (KindSeen) and queued URLs (KindQueued) to its new owner, whose Local
//     sink must implement HandoffSink. Ownership().Expect lets the members
//     of a view being changed to connect before SetView; Ownership().Retire
//     refuses the members that left once the change is done. Drained is
//     Quiescent for nodes paused by a membership change. The barrier that
//     uses all this is internal/crawl/elastic.go.
//  7. Close the Splitter (and stop the server) on shutdown. Peers keep their
//     streams to this node open: call Transport().StopReceiving when the
//     server's graceful stop begins, or it waits for its bound.
//  8. A node whose frontier was rebuilt (it lost URLs its peers sent it
//     and it acknowledged) calls RequestResend on its stopped spool. Once
//     it runs again its status carries the token; each peer reading it
//     re-sends its archive for the node, once (resend.go), and Quiescent
//     waits until every peer has.
//
// A peer that cannot be reached is logged (Options.Logger) once per kind of
// failure (FailureKind: refused, tls, timeout, ...) and then at most once
// per Options.ErrorLogEvery, and again when it recovers; its last failure
// is in PeerStats (LastError, LastErrorKind, LastErrorAt, Failing).
//
// A Splitter and its parts are safe for concurrent use. Stats returns plain
// counters, including the cross-machine traffic reduction (1 − sent ÷
// discovered remote) and the local share.
//
// # Design
//
// The split of the URL stream by host among crawler processes, with a
// per-peer cache of recently sent URLs in front of the batches, is the
// distributed Mercator's host splitter: Najork & Heydon, "High-Performance
// Web Crawling" (Handbook of Massive Data Sets, 2002), and Broder, Najork &
// Wiener, "Efficient URL Caching for World Wide Web Crawling" (WWW 2003),
// which measured the cache. Spooling each peer's URLs to disk and sending
// them in large batches follows Shkapenyuk & Suel, "Design and
// Implementation of a High-Performance Distributed Web Crawler" (ICDE
// 2002). Front coding is from Koht-arsa & Sanguanpong's in-memory URL
// compression; termination detection is the four-counter method (Mattern,
// 1987) applied per channel.
package hostsplit
