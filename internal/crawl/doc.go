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
//     that lost its manifest marker or an sstable's data).
//
// Close merges the DUE's buffer into the frontier, so that at rest the
// buffer log holds nothing: damage to a log tail cannot be told from a
// crash mid-write, and is cut off. After a kill -9 the log does hold the
// last links found, and damage to it then loses them unnoticed (as a power
// failure does without Options.DUEFsync).
//
// Repair (`crawler fsck --repair`) rebuilds rather than patches: it reads
// what the old stores still hold (the frontier's queue, the DUE's pending
// batches and buffer), moves them aside, and admits those URLs plus every
// URL of crawl.log into a fresh DUE and frontier. Fetched URLs are queued
// again because their links are known nowhere else: the fetched set is
// re-crawled once (counted, logged), and no URL is lost. Their link depth
// is not in the log: they restart at depth 0, so under MaxDepth a rebuilt
// crawl may go deeper than the first one. A cluster member's spool is not
// checked.
//
// IDENTITY (identity.go) records the kind of run (crawl, node, demo), the
// node and a digest of the seeds (and simweb config): Open refuses a
// directory made by another run (ErrIdentityMismatch) unless
// Options.ForceIdentity.
package crawl
