package warc_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
)

// TestNotModifiedRevisit: a 304 to a conditional request is written as a
// revisit record of profile server-not-modified, with its request record,
// and indexed as warc/revisit.
func TestNotModifiedRevisit(t *testing.T) {
	dir := t.TempDir()
	w := newWriter(t, warc.Options{Dir: dir, NodeID: "nt"})
	prev := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	loc, err := w.WriteFetch(warc.Fetch{URL: "http://a.test/p", StatusCode: 304, NotModified: true, RefersToDate: prev,
		RequestHeader: http.Header{"If-None-Match": {`"v1"`}}, Header: http.Header{"Etag": {`"v1"`}}})
	if err != nil {
		t.Fatal(err)
	}
	if !loc.Revisit {
		t.Fatalf("Location %+v: not a revisit", loc)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := warctest.Validate(files(t, dir)[0])
	if err != nil {
		t.Fatal(err)
	}
	var got, req bool
	for _, r := range recs {
		switch r.Type {
		case "revisit":
			got = true
			if r.Header["WARC-Profile"] != warc.ProfileServerNotModified || r.Header["WARC-Refers-To-Target-URI"] != "http://a.test/p" ||
				r.Header["WARC-Refers-To-Date"] != "2026-01-02T03:04:05Z" {
				t.Errorf("revisit header %v", r.Header)
			}
		case "request":
			req = true
		case "response":
			t.Errorf("a 304 written as a response record")
		}
	}
	if !got || !req {
		t.Fatalf("records %+v: want a revisit and its request", recs)
	}
}
