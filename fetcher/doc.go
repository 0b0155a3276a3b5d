// Package fetcher downloads one URL politely and safely.
//
// It wraps net/http with a tuned transport (per-host connection reuse,
// HTTP/2 by ALPN, TLS session resumption, dial, TLS, header and whole-fetch
// timeouts, a body cap and a decompression cap, optional proxies), a
// DNS cache with an optional resolver override (used to reach simweb's virtual
// hosts on loopback without DNS), a private-address guard, and robots.txt
// handling per RFC 9309.
//
// Bodies land in a RewindBuffer, the RewindInputStream of Heritrix: memory up
// to a threshold, an unlinked temporary file beyond it; every processor (link
// extractor, content fingerprint for Mercator's content-seen test, WARC
// writer) calls NewReader and reads from the start.
//
// Redirects are not followed inline: the target is returned in
// Response.Location so that the caller hands it on as a discovered link and
// politeness and duplicate elimination apply to it, as in the crawl of
// Broder, Najork & Wiener (WWW 2003) and Mercator (Heydon & Najork, 1999).
//
// # Usage
//
//	f, err := fetcher.New(fetcher.Options{})   // defaults suit a real crawl
//	defer f.Close()
//	rules, fetched, dur, err := f.Robots(ctx, u.Scheme, u.Host)
//	// fetched: the robots.txt request took a politeness slot of dur.
//	if rules.Retry { ... }                    // unreachable or deferred: requeue until rules.Expires
//	if !rules.Allowed(rawURL) { ... }
//	resp, err := f.Fetch(ctx, rawURL)
//	if err != nil { if fetcher.IsRetryable(err) { ... } ; log(err, fetcher.Kind(err)); return }
//	defer resp.Close()                        // ALWAYS: releases the temp file
//	links := extract(resp.Body.NewReader())    // each processor rewinds
//	fp, _ := resp.Body.Fingerprint()
//
// # Caller's duties
//
//   - Close every Response (a defer also covers panics in processors);
//     spilled bodies are unlinked at creation, so even a crash leaves no file.
//   - Politeness is the frontier's: at most one request per host in flight,
//     robots.txt fetches included (Robots reports whether it used the network
//     and for how long), and Crawl-delay (RobotsRules.CrawlDelay) respected.
//     Give Options.RobotsHostGate a way to borrow another host's slot, for
//     robots.txt redirects across hosts.
//   - Hand Response.Location of 3xx responses on as a discovered link.
//   - Set AllowPrivate only for tests and the simweb demo.
//
// # Hostile servers
//
// A response costs at most BodyCap wire bytes, DecompressCap decoded bytes
// and MaxContentCodings decoders (more stacked codings fail with
// ErrTooManyEncodings); headers, 1xx responses included, are capped at
// 256 KiB; HeaderTimeout and FetchTimeout end trickling servers. The guard
// judges every address dialled, in any notation a URL may carry it
// (decimal, octal, hex or short IPv4, IPv4-mapped IPv6, zones, localhost
// names: none is sent to DNS). internal/hostile serves all of these on
// loopback; hostile_test.go runs the Fetcher against it.
//
// # HTTP/2 and TLS
//
// HTTP/2 is used when an https server offers it by ALPN (DisableHTTP2 turns
// it off); Response.Proto says which protocol answered. The caps, timeouts
// and the guard apply to h2 as to HTTP/1.1 (hostile headers and bombs are
// tested over both). h2 adds no parallelism: the frontier gives a host one
// request at a time, so its h2 connection carries one stream at a time,
// and Go's h2 client does not share a connection between host names. A
// host holds one h2 connection (fewer than MaxIdleConnsPerHost); a dead
// one is found by a ping after 30 s of silence. The transport's
// MaxIdleConns does not bound h2 connections, so the Fetcher closes the
// idle ones when more than MaxIdleConns h2 connections are open
// (Stats.IdleSweeps). TLS sessions are resumed
// from a bounded LRU (TLSSessionCacheSize); Stats counts handshakes and
// resumptions.
//
// # Failures by cause
//
// A TLS failure is ErrTLS (not retryable) with a kind naming the cause —
// ErrCertUnknownAuthority, ErrCertHostname, ErrCertExpired,
// ErrCertInvalid, ErrTLSHandshake, ErrNotTLS — or, timed out, ErrTimeout
// with ErrTLSTimeout; a DNS failure is ErrDNSNotFound, ErrDNSOther (class
// ErrDNS) or ErrDNSTimeout (class ErrTimeout). Kind(err) returns the kind;
// Stats counts each, robots.txt requests included. For robots.txt a TLS
// failure, like a refused address, is a verdict and not an outage: the
// rules are RobotsUnreachable without Retry at once (the caller logs the
// host's URLs with RobotsRules.Err), and robots.txt is tried again after
// RobotsErrorTTL; Options.Logger gets an Info line with the cause.
//
// # Proxies
//
// Options.Proxy chooses a proxy per request (ProxyURL, ProxyFromEnvironment
// for HTTPS_PROXY/HTTP_PROXY/NO_PROXY, ParseProxy for the CLI's --proxy
// none|env|URL); the library's default is none, the crawler's is env. https
// targets go through CONNECT. The private-address guard judges the target,
// not the proxy (the operator's, allowed on loopback): without AllowPrivate
// the target's name is resolved here and refused if any address is private,
// before anything is sent — the proxy resolves it again, so DNS rebinding
// between the two lookups is not excluded. Hosts in Options.Resolve are
// always reached directly. proxy_test.go runs Debian's tinyproxy.
//
// # Concurrency
//
// A Fetcher is safe for concurrent use by any number of workers; concurrent
// Robots calls for one host share a single fetch. A Response and its
// RewindBuffer belong to one worker; after the body is complete, readers
// from NewReader may run concurrently, but not concurrently with Close.
// In-memory bodies are pooled buffers, another page's once closed: a
// reader used after Close fails with ErrBufferClosed.
//
// # robots.txt
//
// github.com/temoto/robotstxt differs from RFC 9309 in grouping, user-agent
// matching, tie-breaking and pattern length in ways that cannot be fixed from
// outside its API (see robotstxt.go), so this package parses groups and
// matches rules itself and measures both against Google's compliance suite
// (ctc_test.go). Status handling follows RFC 9309 §2.3.1: 2xx rules; up to 5
// redirects (more ⇒ as 404), across hosts too: a hop to another host is a
// request outside the caller's politeness slot, so it first takes that
// host's slot from Options.RobotsHostGate (the crawler's frontier), and
// while the gate refuses the rules are RobotsDeferred (hold the URLs, the
// next call resumes at the hop); without a gate such a hop is refused
// (allow all, RobotsRules.RefusedRedirect for the caller's log) unless
// RobotsCrossHostRedirects follows it inline; 4xx allow all; 5xx or network failure disallow
// all, cached for RobotsErrorTTL, and after 30 days of outage the last good
// copy, or allow all; at most 500 KiB parsed; cached ≤ 24 h in a bounded LRU.
package fetcher
