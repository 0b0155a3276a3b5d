package report

import (
	"fmt"
	"io"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// addRevisit sums a node's continuous-crawling figures (nil while every
// node has it off).
func (r *Report) addRevisit(s crawl.RevisitStats) {
	if !s.Enabled {
		return
	}
	if r.Revisit == nil {
		r.Revisit = &crawl.RevisitStats{Enabled: true}
	}
	v := r.Revisit
	v.Scheduled += s.Scheduled
	v.Queued += s.Queued
	v.NotModified += s.NotModified
	v.Changed += s.Changed
	v.Unchanged += s.Unchanged
	v.Forgotten += s.Forgotten
	if !s.NextDue.IsZero() && (v.NextDue.IsZero() || s.NextDue.Before(v.NextDue)) {
		v.NextDue = s.NextDue
	}
}

// writeRevisit writes the continuous-crawling line, if it was on.
func (r *Report) writeRevisit(w io.Writer) {
	v := r.Revisit
	if v == nil {
		return
	}
	fmt.Fprintf(w, "revisits        %d URLs scheduled, %d queued again; of the revisits %d found the page changed, %d unchanged (%d of them 304 not-modified, in fetches above)",
		v.Scheduled, v.Queued, v.Changed, v.Unchanged, v.NotModified)
	if v.Forgotten > 0 {
		fmt.Fprintf(w, "; %d schedules dropped (host now another node's)", v.Forgotten)
	}
	fmt.Fprintln(w)
}
