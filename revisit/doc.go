// Package revisit is continuous crawling's schedule: after a URL is
// fetched it becomes due again at fetch time + interval, and is queued like
// any URL when that time comes (it is not "new": the URL-seen set is not
// consulted or changed).
//
// The interval is fixed (Options.Interval) or adaptive: it is halved when a
// fetch finds the page changed (its payload digest differs from the last
// one) and doubled when not (a 304 Not Modified or the same digest),
// clamped to [Options.Min, Options.Max]. Cho & Garcia-Molina ("Estimating
// frequency of change", ACM TOIT 2003) show that a page's change rate can
// be estimated from the number of visits that found it changed
// (ChangeRate); the multiplicative update is the usual cheap way to let
// each URL's interval follow that rate without keeping per-visit logs.
//
// Store keeps each URL's History (last digest, ETag, Last-Modified, last
// change, interval) and an index by due time in pebble, so that a
// restarted node keeps its schedule; Take hands out due URLs exactly once
// across crashes when paired with frontier.AddBatch (see Take).
package revisit
