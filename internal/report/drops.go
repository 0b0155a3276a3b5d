package report

import (
	"fmt"
	"strconv"
)

// Limits are the bounds a node ran with that make it drop URLs, so that
// the report names them and the knob to turn (Input.Limits).
type Limits struct {
	MaxPagesPerHost int // hard per-host budget; ≤ 0: none
	MaxDepth        int // link depth bound; 0: none
}

// Drop is one cause of URLs found but not fetched (or fetched without a
// page), with its count and the sentence the text report prints.
type Drop struct {
	Cause string `json:"cause"` // host_budget, max_depth, filtered, nofollow, robots, private_address, http_error, fetch_error
	N     uint64 `json:"n"`
	Text  string `json:"text"`
}

// knob names the setting behind a limit as the operator sets it: a flag
// of `crawler crawl` and `crawler demo`, a key of a node's config file.
func (r *Report) knob(flag string) string {
	if r.Kind == KindNode {
		return "the config's " + map[string]string{"--max-pages-per-host": "max_pages_per_host", "--max-depth": "max_depth",
			"--allow-private": "allow_private"}[flag]
	}
	return flag
}

// drops lists what the crawl dropped, by cause, from the counters the
// engine keeps; causes with nothing dropped are left out.
func (r *Report) drops(l Limits) []Drop {
	var out []Drop
	add := func(cause string, n uint64, format string, args ...any) {
		if n > 0 {
			out = append(out, Drop{Cause: cause, N: n, Text: fmt.Sprintf(format, args...)})
		}
	}
	budget := "the per-host budget"
	if l.MaxPagesPerHost > 0 {
		budget += " of " + Thousands(uint64(l.MaxPagesPerHost))
	}
	add("host_budget", r.BudgetDropped, "%s URLs dropped by %s: raise %s", Thousands(r.BudgetDropped), budget, r.knob("--max-pages-per-host"))
	depth := "the depth limit"
	if l.MaxDepth > 0 {
		depth += " of " + strconv.Itoa(l.MaxDepth)
	}
	add("max_depth", r.LinksTooDeep, "%s links dropped beyond %s: raise %s", Thousands(r.LinksTooDeep), depth, r.knob("--max-depth"))
	add("filtered", r.LinksFiltered, "%s links filtered out (scope, URL-trap and URL rules)", Thousands(r.LinksFiltered))
	add("nofollow", r.LinksNoFollow, "%s links not followed for nofollow", Thousands(r.LinksNoFollow))
	add("robots", r.RobotsDisallowed, "%s URLs disallowed by robots.txt (crawl.log: OUTCOME robots, STATUS 0)", Thousands(r.RobotsDisallowed))
	add("private_address", r.PrivateRefused, "%s URLs refused at a private or loopback address: %s allows them", Thousands(r.PrivateRefused), r.knob("--allow-private"))
	add("http_error", r.HTTPErrors, "%s fetches answered with an HTTP error status (1xx, 4xx, 5xx)", Thousands(r.HTTPErrors))
	add("fetch_error", r.FetchErrors, "%s fetches failed without a response (network, TLS, DNS, timeouts)", Thousands(r.FetchErrors))
	return out
}

// DropLines is the report's "dropped" lines: one per cause, or one saying
// nothing was dropped. The end of a complete crawl prints them under its
// "done (frontier empty)".
func (r *Report) DropLines() []string {
	if len(r.Dropped) == 0 {
		return []string{"nothing dropped: no budget, depth, filter, robots.txt, address or fetch failure cost a URL"}
	}
	out := make([]string, len(r.Dropped))
	for i, d := range r.Dropped {
		out[i] = d.Text
	}
	return out
}

// Thousands writes n with a comma every three digits ("2,934").
func Thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
