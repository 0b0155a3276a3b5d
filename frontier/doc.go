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
//  5. Close the Frontier; blocked Next calls return ErrClosed.
//
// Item.Host is the politeness key chosen by the caller: a host name, or an
// IP address or registered domain for per-IP or per-domain politeness.
//
// # Durability
//
// Every Add, AddBatch and Done is one pebble batch. Add and AddBatch return
// once their batch is synced to disk (the fsync is waited for outside the
// lock, so concurrent callers share it); Options.NoSyncAdd turns that off.
// Done does not wait for the sync (Options.SyncDone makes it): pebble
// buffers unsynced writes inside the process, so after a crash — even a
// killed process — the last Done calls may be lost and their URLs handed out
// again. A leased URL stays on disk until Done, so delivery is at-least-once;
// no URL is lost. A failed write breaks the Frontier: every later call
// returns the error.
//
// A Frontier is safe for concurrent use and must be Closed.
//
// Design: Heydon & Najork, "Mercator: A scalable, extensible web crawler"
// (WWW 1999), as summarised in Broder, Najork & Wiener, "Efficient URL Caching
// for World Wide Web Crawling" (WWW 2003), section 2. The politeness
// scheduler (politeness.go) is a deterministic state machine driven by
// explicit times; Frontier wraps it with pebble and blocking.
package frontier
