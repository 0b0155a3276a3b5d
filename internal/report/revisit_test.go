package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// The revisit line sums the nodes' figures and appears only when a node
// revisits.
func TestRevisitLine(t *testing.T) {
	a, b := stats("n0", 10), stats("n1", 10)
	var buf bytes.Buffer
	Build(KindCrawl, []Input{{Stats: a}}, time.Second).WriteText(&buf, "t")
	if strings.Contains(buf.String(), "revisits") {
		t.Fatalf("revisit off, yet:\n%s", buf.String())
	}
	a.Revisit = crawl.RevisitStats{Enabled: true, Scheduled: 5, Queued: 7, NotModified: 2, Changed: 3, Unchanged: 4}
	b.Revisit = crawl.RevisitStats{Enabled: true, Scheduled: 1, Queued: 1, NotModified: 1, Changed: 0, Unchanged: 1}
	r := Build(KindCrawl, []Input{{Stats: a}, {Stats: b}}, time.Second)
	buf.Reset()
	r.WriteText(&buf, "t")
	want := "revisits        6 URLs scheduled, 8 queued again; of the revisits 3 found the page changed, 5 unchanged (3 of them 304 not-modified, in fetches above)"
	if !strings.Contains(buf.String(), want) {
		t.Fatalf("report:\n%s\nwant the line %q", buf.String(), want)
	}
}
