// Package crawl wires Sextant's parts into one crawling node: worker
// goroutines take URLs from the frontier, check robots.txt, fetch into a
// rewind buffer, extract and filter links, and hand them to the host splitter,
// whose local share passes the front cache into the DUE, which feeds new URLs
// back to the frontier (Mercator's loop, Broder, Najork & Wiener, WWW 2003).
//
// Sitemaps (sitemaps.go) travel the same loop as marked URLs of their
// host: a worker offers an origin's robots.txt Sitemap: lines (or
// /sitemap.xml) when it first fetches there, and parses rather than
// extracts a sitemap it fetches.
//
// A worker fetches ahead (ahead.go): once a response is read it releases
// the host (Mercator releases a host when its fetch ends), leases the next
// ready URL and starts its request, then finishes the page while that
// request is on the wire. The frontier hands out at most Workers leases and
// counts completions not yet durable against them, so a kill -9 repeats at
// most one fetch per worker.
//
// A Node is one member of a cluster (a cluster of one for a single-node
// crawl). It owns its goroutines: Run returns when the crawl ends or its
// context is cancelled, and Close waits for everything it started.
//
// # Data safety
//
// A data directory holds three stores that must agree: the frontier
// (pebble), the DUE (seen-set runs, buffer log, MANIFEST of delivered
// batches) and crawl.log (one line per fetch attempt), plus IDENTITY. The
// set of URLs the node ever admitted is the frontier's queue ∪ the crawl
// log's URLs ∪ the DUE's undelivered batches and buffer; the DUE itself
// keeps only fingerprints. Open (check.go) refuses, with ErrDamaged naming
// the store and the fix, a directory where that set may have lost members:
//
//   - a store missing from a directory crawled in before;
//   - a DUE MANIFEST that does not decode, a store that does not open;
//   - the frontier's last applied DUE batch (frontier.Applied) behind the
//     DUE's last delivered one, read before the DUE is opened (Open
//     re-delivers pending batches and would hide the gap): the frontier
//     lost writes, e.g. a truncated WAL;
//   - the frontier ahead of the DUE's last committed batch: the DUE lost
//     its seen-set, so its new batches would be ignored as applied;
//   - a frontier whose keys do not match its stored count or whose blocks
//     fail their checksums (one scan of every key: pebble opens a store
//     that lost its manifest marker or an sstable's data). The scan costs
//     0.2–0.5 s per 10⁶ queued URLs (docs/bench/open-check.md);
//     Options.SkipOpenCheck (`--skip-check`) leaves it to fsck, the checks
//     above still run.
//
// A cluster member's directory also holds its splitter's spool: the links
// of pages its crawl log records as done, until their owner acknowledges
// them (then archived, for a peer lost with its disk). A spool that lost
// writes keeps its epoch with its sequence numbers behind, and the peers
// then take its next batches for resends (dropped) or gaps (refused for
// ever): the cluster loses URLs or wedges. NewMember checks the spool
// before the splitter opens it (check.go) and refuses one that is missing
// from a crawled-in directory, does not open, holds entries that do not
// decode, or is below spool.mark: the spool's epoch and last sequence
// number per peer, written at every open and clean close. Marks only
// grow, so a spool below its mark lost writes.
//
// Close merges the DUE's buffer into the frontier, so that at rest the
// buffer log holds nothing: damage to a log tail cannot be told from a
// crash mid-write, and is cut off. After a kill -9 the log does hold the
// last links found, and damage to it then loses them unnoticed (as a power
// failure does without Options.DUEFsync). Likewise the spool's batches of
// the last seconds before a kill -9 (since its mark's last refresh), if
// the kill is followed by damage to the spool's WAL tail. fsck's help and
// the README's known limits say so.
//
// Repair (`crawler fsck --repair`) rebuilds rather than patches: it reads
// what the old stores still hold (the frontier's queue, the DUE's pending
// batches and buffer), moves them aside, and admits those URLs plus every
// URL of crawl.log into a fresh DUE and frontier. Fetched URLs are queued
// again because their links are known nowhere else: the fetched set is
// re-crawled once (counted, logged), and no URL is lost. Their link depth
// is the one their logged hop path implies (lines written before hop paths
// were logged: depth 0, so under MaxDepth such a rebuilt crawl may go
// deeper than the first one). A member's damaged spool is
// rebuilt under a new epoch with the batches it still holds
// (hostsplit.RebuildSpool); the batches it lost are re-derived by those
// same fetches, whose links are routed again. A member's frontier holds
// URLs its peers sent too, which those fetches do not re-derive when only a
// peer's page links to them; the peers keep every batch the member
// acknowledged in their archive. So Repair of a member also draws a resend
// token (hostsplit.RequestResend) stored in its spool: running again, the
// member advertises it in its Peer/Status answers, and each peer that reads
// it (its termination check polls every member) re-sends its archive for
// the member as new batches, whose URLs the member's DUE drops if it knows
// them, and records the token served (once per peer, durably: a restart
// neither serves it again nor forgets a serve cut short). The cluster's
// termination check waits until every member served every other member's
// token, then, by the four counters, until the batches are applied.
//
// IDENTITY (identity.go) records the kind of run (crawl, node, demo), the
// node and a digest of the seeds (and simweb config): Open refuses a
// directory made by another run (ErrIdentityMismatch) unless
// Options.ForceIdentity.
package crawl
