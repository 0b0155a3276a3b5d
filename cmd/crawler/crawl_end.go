package main

import (
	"fmt"
	"io"
)

// writeEnd writes what follows the end line: whether the run resumed, with
// the totals since the first start, and, when the frontier ran empty, what
// the crawl dropped (what never got into it, or never became a page).
func (r *crawlReport) writeEnd(w io.Writer, complete bool) {
	if r.SinceFirstStart != nil {
		for _, l := range r.SinceFirstStart.Lines(r.Report) {
			fmt.Fprintln(w, l)
		}
	}
	if complete {
		for _, l := range r.DropLines() {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}
