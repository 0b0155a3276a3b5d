// Package simweb is the deterministic synthetic web every test and the demo
// crawl: many virtual hosts (h00000.sim.test, h00001.sim.test, …) served by
// one loopback HTTP server, with a realistic link structure, the pathologies
// a crawler must survive, and a ground-truth oracle of what a correct crawl
// fetches.
//
// # Shape
//
// The link structure follows the figures of Broder, Najork & Wiener
// (Mercator's crawl, WWW 2003; see ../shared/docs/PAPERS.md): a log-normal
// out-degree with median ≈ 23 and mean ≈ 60 links per HTML page, Zipf-like
// popularity of pages within a host (home pages and low-numbered articles)
// and of hosts, ≈ 80% of links to the page's own host (81.5% stayed local in
// Mercator's 4-machine crawl), ≈ 30% of a page's links repeated on the page,
// heavy-tailed page sizes (median ≈ 20 KB), and a share of images, PDFs,
// style sheets, scripts and media. Links sit in every element that can carry
// one and are spelled in every way that resolves to the same URL: relative
// (../x, ./y, ?q, //host/p), absolute, mixed-case scheme and host, an
// explicit :80, dot segments (/./, /x/../, /%2e/), fragments, and a literal
// space and é for %20 and %C3%A9. Links to other hosts favour their home
// pages, so the homes of popular hosts are the hubs. Config.NavLinks (off
// by default) adds a site-navigation block repeated on every page of a host,
// as real sites have (it is what gives their URL stream its small-cache hit
// rate; see docs/caching-study.md). Big pages that exhaust
// their (small) host link elsewhere half the time; on DefaultConfig the
// measured same-host share is ≈ 0.76–0.8 and the repeat share ≈ 0.3 (see
// docs/bench/simweb.md).
//
// Nothing is stored per page: every response is generated on request from
// cheap splitmix64 hashes of (seed, host, page). A Web keeps 12 bytes per host,
// so a web of 10⁷ pages costs about a megabyte. The same Config gives
// byte-identical responses in every process.
//
// # Pathologies
//
// Each pathology is given to a configurable share of hosts (Config.Shares),
// at most one per host: robots.txt that disallows, is 404, 503, redirects
// (2 hops, or 7 which is too many), is binary garbage, is larger than
// 500 KiB (a rule after 500 KiB must be ignored), or sets Crawl-delay;
// redirect chains (301/302/307/308), loops and cross-host redirects; 404,
// 410, 500 and 503 pages; slow hosts; pages that stall mid-body; huge pages
// (up to Config.HugeMax, streamed); gzip bombs (Config.BombSize); wrong and
// missing Content-Type; bogus charsets and invalid UTF-8; malformed HTML;
// and trap hosts with infinite URL spaces (calendars, session ids, ever
// deeper paths) that link only to themselves. Pathological bodies carry all
// their links in their first 4 KiB. Links a crawler must NOT follow (decoys)
// point to /orphan/ pages: in comments, scripts and textareas, in the bodies
// of 3xx/4xx/5xx responses and of text/plain pages.
//
// Config.SitemapShare (on in the presets) gives some Normal hosts
// sitemaps (sitemaps.org): Sitemap: lines in robots.txt, /sitemap.xml, an
// index of gzip and text sitemaps, listing articles and "sitemap-only"
// pages no link reaches, plus entries a correct crawler drops (another
// host's, out of scope, too long, beyond 50,000 URLs, listed by an index
// nested too deep). Rules.Sitemaps makes the oracle count them.
//
// # HTTPS
//
// Config.HTTPSShare and its siblings (set in the presets: most hosts) make
// hosts HTTPS only (nothing on :80), or redirect plain HTTP to https with a
// 301, offer HTTP/2 by ALPN, or send HSTS (tls.go). Start makes a
// short-lived ECDSA CA and a certificate for *.<Domain>; Server.CAPEM,
// CertPool and TLSClientConfig hand it to crawlers. Canonical URLs of TLS
// hosts are https, and the oracle knows them.
//
// # The oracle
//
// Web.Oracle walks the generator (never HTTP) and returns the exact set of
// URLs a correct crawler fetches under Rules; Rules documents the contract
// (canonical URLs, robots.txt handling, what is discovered from which
// response, trap budgets). OracleResult.Check compares a crawl's fetched
// URLs with it and explains the differences. The package's tests check the
// oracle against an independent breadth-first crawler over real HTTP.
//
// # Serving
//
// Start serves a Web on two listeners on 127.0.0.1 (plain and TLS; loopback
// only unless allowed), choosing the host by the Host header; Server.DialContext is the resolver
// override a crawler uses so that no test touches DNS. The server keeps a
// per-host log of every request's start and end (Server.Log) so that tests
// can check politeness from the server's side. StartDir serves a directory
// of real static sites instead, one sub-directory per host name.
//
// # Concurrency
//
// A Web is immutable and safe for concurrent use; it needs no Close. A
// Server is safe for concurrent use and must be Closed; Close aborts
// requests in progress and waits for every goroutine it started.
//
// # Usage
//
//  1. web, err := simweb.New(simweb.SmallConfig()) (or DefaultConfig, or
//     your own Config; a zero field means its default);
//  2. srv, err := simweb.Start(web, simweb.Options{}); defer srv.Close();
//  3. point the crawler's transport at srv.DialContext and crawl
//     web.Seeds();
//  4. oracle, err := web.Oracle(web.Seeds(), simweb.Rules{}) and
//     oracle.Check(fetchedURLs); check politeness with srv.Log(),
//     MaxConcurrent and MinGap.
package simweb
