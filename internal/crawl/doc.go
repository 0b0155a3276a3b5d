// Package crawl wires Sextant's parts into one crawling node: worker
// goroutines take URLs from the frontier, check robots.txt, fetch into a
// rewind buffer, extract and filter links, and hand them to the host splitter,
// whose local share passes the front cache into the DUE, which feeds new URLs
// back to the frontier (Mercator's loop, Broder, Najork & Wiener, WWW 2003).
//
// A Node is one member of a cluster (a cluster of one for a single-node
// crawl). It owns its goroutines: Run returns when the crawl ends or its
// context is cancelled, and Close waits for everything it started.
package crawl
