// Package extract finds the links in a fetched document and filters them.
//
// # Extraction
//
// An Extractor runs a streaming golang.org/x/net/html tokenizer (no DOM)
// over the body and yields every URL an attribute can carry:
//
//	a, area, link                      href
//	img, source                        src, srcset (every candidate)
//	script, iframe, frame, embed,
//	audio, video, track                src
//	form                               action
//	object                             data
//	meta http-equiv=refresh            content ("0; url=...", HTML standard parsing)
//
// The first <base href> changes the base for the links after it. Links
// inside <noscript> are found (a crawler runs no scripts); links in
// comments, <script> and <style> text are not. Each reference is resolved
// and canonicalised by internal/urlnorm (WHATWG URL rules, fragment
// dropped); references that do not resolve are counted and skipped, and
// javascript:/data: references are skipped unresolved. A URL is emitted
// once per document unless Options.KeepDuplicates.
//
// Non-UTF-8 documents are decoded with golang.org/x/net/html/charset: the
// encoding comes from a BOM, the Content-Type charset, or a <meta> in the
// first 1024 bytes; undeclared documents are UTF-8 unless their first 1024
// bytes are not valid UTF-8 (then windows-1252). URLs are then resolved as
// UTF-8 (a browser would percent-encode the query in the page's encoding;
// see urlnorm).
//
// Hostile input is bounded: reading stops after Options.MaxBytes, a token
// (tag or text run) larger than MaxTokenBytes ends extraction, attribute
// values over MaxAttrLen are skipped and at most MaxLinks links are
// emitted; Result says which limit was hit. Nothing panics (fuzzed).
//
// XHTML — documents served as application/xhtml+xml, or as
// application/xml or text/xml with an XHTML <html> root — is read as XML
// (encoding/xml, non-strict, with HTML's entities and void elements), as a
// browser reads it: with HTML rules a self-closing <script/> would swallow
// the rest of the page. The links and limits are the same; a syntax error
// hands the rest of the document, from the failing token on, to the HTML
// tokenizer (see extractXML). Text between tags is not decoded: it is
// skipped once checked to be what the decoder would accept (xmlskip.go).
//
// IsHTML decides which responses go to the extractor.
//
// # Robots directives
//
// Result.Robots holds what the document's robots <meta> elements say
// (name "robots" or Options.RobotsToken, the crawler's own; nofollow,
// noindex, none; several combine, the most restrictive wins): the caller
// decides what to do with the links, all of which are emitted.
// HeaderDirectives reads X-Robots-Tag headers, whose "token: …" parts
// apply to that crawler only. The links of <a>, <area> and <form>
// elements whose rel holds nofollow are not emitted (counted in
// Result.NoFollow) unless Options.FollowNoFollow. Result.Canonical is the
// first <link rel=canonical> (the link is emitted too); HeaderCanonical
// reads a Link header's. The XHTML path reads the same elements.
//
// # Filtering
//
// A Filter applies the crawl's rules to each resolved URL — schemes, URL
// length, deny/allow lists, scope (any host, the seed's host, its registered
// domain via the public suffix list, or a list of domain suffixes) and
// repeated path segments — and returns a Reason the crawler counts. The
// per-host trap budget (IRLbot's BEAST: past a soft budget a host's URLs are
// demoted to low priority, past a hard budget dropped) is the frontier's
// (frontier.Budget, persisted with the queues), and link depth is applied by
// internal/crawl to the depth that travels with each URL. The
// private-address guard is the fetcher's job, at dial time. Link.Parsed
// returns a link's URL parsed without parsing it again (it is canonical
// already).
//
// # Caller's duties and concurrency
//
// An Extractor reuses buffers and is not safe for concurrent use: one per
// worker. A Filter is safe for concurrent use. Nothing here needs Close.
//
// Mercator extracts every link, not only anchors (Heydon & Najork, 1999;
// Broder, Najork & Wiener, WWW 2003).
package extract
