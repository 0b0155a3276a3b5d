// Package frontier is Mercator's two-level URL frontier, persisted in pebble.
//
// Front queues order URLs by priority (queue 0 first; FIFO within a queue,
// which makes the crawl breadth-first); back queues each hold the URLs of
// exactly one host, and a heap of hosts keyed by the earliest instant each
// may be fetched again enforces politeness: at most one request in flight
// per host, and the next request no sooner than Factor × the duration of the
// previous fetch (Mercator used 10), clamped to [MinDelay, MaxDelay], never
// below the robots.txt Crawl-delay (capped at MaxCrawlDelay), and backed off
// exponentially while a host keeps failing.
//
// As in Mercator, about 3 × Workers hosts have a back queue (BackQueues);
// every other host waits in the front queues, on disk. When no active host
// may be fetched, more hosts are activated, up to MaxBackQueues. Only the
// heads of queues (a few entries per active host and per priority) live in
// memory, so memory stays flat as the frontier grows to 10⁸ URLs; the
// politeness state of inactive hosts is kept on disk too (plus a bounded
// in-memory cache of the last 65,536 hosts that went idle).
//
// # Usage
//
//  1. Open a Frontier on a directory; seed it with AddBatch("seeds", 1, seeds)
//     so a restart does not queue the seeds again.
//  2. Each worker loops: l := Next(ctx); fetch l.URL; Done(l, Result{...})
//     exactly once per lease, with the fetch duration, the host's
//     Crawl-delay and whether it failed (Requeue to put the URL back).
//  3. New URLs (from the DUE) arrive with AddBatch(source, seq, items): the
//     frontier applies each (source, seq) once, atomically with the record
//     of seq, so a producer that re-delivers after a crash adds nothing
//     twice. Add is the non-idempotent variant.
//  4. The crawl is over when Idle() holds (WaitIdle blocks until it does)
//     and no producer has URLs in flight towards the frontier. Next blocks on an idle frontier (unless
//     Options.ExitWhenIdle, then it returns ErrEmpty).
//  5. A request to a host outside its leases (a robots.txt redirect from
//     another host) takes the host's slot with Borrow — never blocking: it
//     says when to ask again, and promises the slot to the borrower
//     (Options.BorrowHold) so the host's own URLs cannot win every race —
//     and gives it back with Return, after which the host rests as after a
//     fetch.
//  6. Close the Frontier; blocked Next calls return ErrClosed.
//
// Item.Host is the politeness key chosen by the caller: a host name, or an
// IP address or registered domain for per-IP or per-domain politeness.
// Item.Depth (link depth) is stored with the URL and handed back in its
// Lease.
//
// # Trap budget
//
// Options.HostBudget bounds the URLs admitted per site (Item.Site, default
// Host) over the whole crawl: beyond Soft they are queued at a low priority,
// beyond Hard dropped (IRLbot's BEAST). The counts live in pebble and are
// updated in the batch that queues the URLs, so a budget holds across
// restarts and kill -9 (a re-delivered AddBatch is ignored with its counts).
//
// # Durability
//
// Every Add and AddBatch is one pebble batch; they return once it is synced
// to disk (the fsync is waited for outside the lock, so concurrent callers
// share it); Options.NoSyncAdd turns that off. Done calls are
// group-committed (done.go): each changes the in-memory state at once and
// joins a shared batch (≤ 256 Dones, counters and host states written once)
// that is committed before any other write or read of queue keys, when Next
// is about to wait, when no lease is outstanding, and on Close. Without
// Options.SyncDone, Done does not wait for the commit or the sync: after a
// crash — even a killed process — the last Done calls (up to a group plus
// pebble's unsynced log tail) may be lost and their URLs handed out again.
// With SyncDone a Done returns once its group is durable; concurrent Dones
// share one fsync. With SyncDone and Options.MaxLeases (boundsync.go) a Done
// does not wait: a Done not yet durable counts against MaxLeases as a lease
// does, and a syncer goroutine makes them durable in groups, so a crash
// still hands out at most MaxLeases URLs again while a narrow crawl's
// one-at-a-time Dones share fsyncs. A leased URL stays on disk until its Done is committed,
// so delivery is at-least-once; no URL is lost. A failed write breaks the
// Frontier: every later call returns the error.
//
// Code that reads the store directly (frontier-internal, e.g. hand-off
// staging) must call flushDoneLocked first, or run with no lease outstanding
// and every Done returned: then no Done write is pending.
//
// A Frontier is safe for concurrent use and must be Closed.
//
// Design: Heydon & Najork, "Mercator: A scalable, extensible web crawler"
// (WWW 1999), as summarised in Broder, Najork & Wiener, "Efficient URL Caching
// for World Wide Web Crawling" (WWW 2003), section 2. The politeness
// scheduler (politeness.go) is a deterministic state machine driven by
// explicit times; Frontier wraps it with pebble and blocking.
package frontier
