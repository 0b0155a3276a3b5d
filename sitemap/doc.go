// Package sitemap is a streaming, bounded parser of sitemaps as defined by
// the sitemaps.org protocol (https://www.sitemaps.org/protocol.html): XML
// <urlset> files (loc, lastmod, changefreq, priority), <sitemapindex>
// files (the locs of child sitemaps) and plain-text files (one URL per
// line, UTF-8), each possibly gzip-compressed (detected by its magic bytes,
// whatever the file is called).
//
// # Limits
//
// The protocol caps a file at 50,000 URLs and 52,428,800 bytes
// uncompressed; Parse enforces both without holding the file in memory:
// entries beyond Options.MaxURLs are counted in Result.Dropped (and Parse
// returns ErrTooManyURLs), and reading stops after Options.MaxBytes
// decompressed bytes with ErrTooLarge, so a gzip bomb is cut. encoding/xml
// never expands external or user-defined entities; Parse also bounds the
// element depth (ErrTooDeep) and the size of a single token
// (ErrTokenTooLarge), so entity and nesting bombs stay small.
//
// # Location rule
//
// sitemaps.org: a sitemap at http://host/path/sitemap.xml may list only
// URLs under http://host/path/ (RulePath, the default). A sitemap named in
// a robots.txt Sitemap: line may list any URL of the robots.txt's host
// (RuleHost, with the robots.txt URL as the base). RuleNone checks nothing
// (the caller applies its own scope). URLs that break the rule are counted
// in Result.OutOfPath and not reported.
//
// # Usage
//
// Parse a file as it arrives:
//
//	res, err := sitemap.Parse(body, "http://h/sitemap.xml", opts, func(e sitemap.Entry) error { … })
//
// and use res.Kind to tell whether the entries are pages (KindURLSet,
// KindText) or child sitemaps (KindIndex). A Walker follows indexes to a
// bounded depth through the caller's Fetcher. Parse is a pure function and
// safe for concurrent use; a Walker is safe for concurrent use if its
// Fetcher is.
package sitemap
