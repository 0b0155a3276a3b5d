// Package fetcher downloads one URL politely and safely.
//
// It wraps net/http with a tuned transport (per-host connection reuse, dial,
// TLS, header and whole-fetch timeouts, a body cap and a decompression cap), a
// DNS cache with an optional resolver override (used to reach simweb's virtual
// hosts on loopback without DNS), a private-address guard, and robots.txt
// handling per RFC 9309 on top of github.com/temoto/robotstxt.
//
// Bodies land in a RewindInputStream: memory up to a threshold, a temporary
// file beyond it; every processor (link extractor, content fingerprint, WARC
// writer) rewinds and reads it. Callers must Close each fetched body.
//
// Redirects are not followed inline: the target is returned as a discovered
// link so that politeness and duplicate elimination apply to it, as in the
// crawl of Broder, Najork & Wiener (WWW 2003).
package fetcher
