// Package urlnorm parses, resolves and canonicalises URLs the way a browser
// does (the WHATWG URL Standard), so that every spelling of one resource maps
// to one string — the string the crawler fingerprints, deduplicates and
// fetches.
//
// The canonical form is the WHATWG URL serialisation ("href") with the
// fragment removed: scheme and host lower-case (IDNA/UTS 46 for non-ASCII
// hosts, IPv4/IPv6 literals in their standard forms), default port dropped,
// "." and ".." path segments removed (including their %2e spellings),
// characters outside the component's allowed set percent-encoded, an empty
// path of an http(s) URL written as "/". Existing percent-escapes are kept
// as they are (the standard neither decodes nor re-cases them), so two URLs
// differing only in %7e vs ~ stay distinct — as they do in a browser.
//
// The reference implementation is github.com/nlnwa/whatwg-url with its
// default (standard) options. It is slow (several allocations per code
// point), so the common case — an http/https reference whose host is a
// plain ASCII DNS name, with valid UTF-8 elsewhere — goes through a
// hand-written fast path that yields the identical string; everything else
// (IDN and IP-literal hosts, userinfo, backslashes outside the query,
// tabs/newlines, invalid UTF-8, other schemes, …) falls back to the
// reference parser. FuzzFastPath checks the two agree.
//
// The reference parser is whatwg-url v0.6.2 with two current-standard
// rules it predates added ('^' percent-encoded in paths; an opaque path's
// last space before '?'/'#' written %20) and one guard: it refuses
// references with more than 512 path separators, because it builds paths
// in quadratic time. It passes 883 of the 891 WHATWG URL tests (the 8
// failures are IDNA edge cases, listed in wpt_test.go).
//
// Normalisation is idempotent: Normalize(Normalize(x)) == Normalize(x)
// (fuzzed by FuzzNormalizeIdempotent).
//
// # Caller's duties
//
// None beyond handling errors: every function is pure, and a *URL is
// immutable, so all functions and methods are safe for concurrent use.
//
// Deviation from a browser: references are always resolved as UTF-8. A
// browser percent-encodes the query of a URL found in a non-UTF-8 document
// in that document's encoding; Sextant decodes the document to UTF-8 first
// (see package extract) and encodes the query in UTF-8.
//
// Background: Lee, Leonard, Wang & Loguinov, "IRLbot" (WWW 2008) and
// Heydon & Najork, "Mercator" (1999) both canonicalise before the URL-seen
// test; the WHATWG standard is what browsers — and hence sites — agree on.
package urlnorm
