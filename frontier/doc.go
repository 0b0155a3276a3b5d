// Package frontier is Mercator's two-level URL frontier, persisted in pebble.
//
// Front queues order URLs by priority (FIFO by default, which makes the crawl
// breadth-first); back queues each hold the URLs of exactly one host, and a heap
// of hosts keyed by the earliest instant each may be fetched again enforces
// politeness: at most one request in flight per host, and the next request no
// sooner than factor × the duration of the previous fetch (Mercator used 10),
// clamped to [MinDelay, MaxDelay] and never below robots.txt Crawl-delay.
//
// Only the heads of queues live in memory; the rest is on disk, so memory stays
// flat as the frontier grows. A restarted frontier resumes from its directory;
// a URL handed out but not completed before a crash is handed out again
// (at-least-once).
//
// Design: Heydon & Najork, "Mercator: A scalable, extensible web crawler"
// (WWW 1999), as summarised in Broder, Najork & Wiener, "Efficient URL Caching
// for World Wide Web Crawling" (WWW 2003), section 2.
package frontier
