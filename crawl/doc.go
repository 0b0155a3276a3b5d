// Package crawl embeds a Sextant crawl node in a Go program: open it on a
// data directory, seed it, run it, read its statistics, close it.
//
//	c, err := crawl.Open(crawl.Options{DataDir: dir, OnFetch: func(p crawl.Page) { ... }})
//	if err != nil { ... }
//	defer c.Close()
//	err = c.Seed(ctx, []string{"https://example.org/"})
//	err = c.Run(ctx) // returns once nothing is queued or in flight, or ctx is done
//
// The design is Mercator's (Heydon & Najork, "Mercator: A scalable,
// extensible Web crawler", World Wide Web 2(4), 1999): a frontier of
// per-host FIFO queues that keeps one request at a time per host and waits
// a multiple of the last fetch's duration between two, a URL-seen test (a
// disk-based DUE behind small front caches) that admits each URL once, a
// content-seen test that skips the links of bodies seen before, and
// workers that fetch (obeying robots.txt), extract links, filter them and
// hand them to the URL-seen test. Everything is durable in DataDir: a node
// killed at any moment resumes where it stopped when opened again on the
// same directory, fetching no URL twice bar the ones in flight.
//
// What the caller must do:
//   - give each node its own DataDir (a directory holds one crawl; reopening
//     it resumes that crawl, seeds included);
//   - Close the crawler after Run has returned, and Run it at most once at
//     a time;
//   - keep OnFetch quick: it is called from many workers at once, each
//     waiting for it.
//
// A Crawler is one node. The distributed crawler (several nodes splitting
// hosts by rendezvous hashing and exchanging URLs over mTLS gRPC) is the
// `crawler node` command; see docs/ARCHITECTURE.md.
package crawl
