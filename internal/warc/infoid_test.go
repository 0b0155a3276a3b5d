package warc

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// A record compressed before a rotation names the closed file's
// warcinfo: the writer rewrites its WARC-Warcinfo-ID for the file it
// lands in (the ID is made stale by hand here; TestWriteFetchReadByGowarc
// checks the field under concurrent rotation).
func TestWarcinfoIDRewrittenAtRotation(t *testing.T) {
	w, err := NewWriter(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fetch := Fetch{URL: "http://a.test/", StatusCode: 200, Header: http.Header{"Content-Type": {"text/html"}},
		Body: io.NewSectionReader(bytes.NewReader([]byte("<p>x</p>")), 0, 8), Outlinks: []string{"http://a.test/o"}}
	if _, err := w.WriteFetch(fetch); err != nil { // opens the file
		t.Fatal(err)
	}
	stale := "<urn:uuid:00000000-0000-4000-8000-000000000000>"
	w.infoID.Store(&stale)
	fetch.URL = "http://b.test/"
	if _, err := w.WriteFetch(fetch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := w.reinfos.Load(); n != 3 {
		t.Errorf("%d records rewritten, want 3 (response, request, metadata)", n)
	}
	for _, name := range w.Files() {
		checkWarcinfoIDs(t, name, readGowarc(t, name))
	}
}

// checkWarcinfoIDs checks that every record of a file but its warcinfo
// names that warcinfo record.
func checkWarcinfoIDs(t *testing.T, name string, recs []goRec) {
	t.Helper()
	if len(recs) == 0 || recs[0].h.Get("WARC-Type") != "warcinfo" {
		t.Fatalf("%s does not start with warcinfo", name)
	}
	id := recs[0].h.Get("WARC-Record-ID")
	for _, r := range recs[1:] {
		if got := r.h.Get("WARC-Warcinfo-ID"); got != id {
			t.Errorf("%s: %s record names warcinfo %q, want %q", name, r.h.Get("WARC-Type"), got, id)
		}
	}
}

// Digest (the crawl log's digest= of a fetch not archived) is the payload
// digest the Writer records for the same body.
func TestDigestIsPayloadDigest(t *testing.T) {
	body := bytes.Repeat([]byte("<p>digest</p>"), 5000) // more than one copy buffer
	w, err := NewWriter(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	loc, err := w.WriteFetch(Fetch{URL: "http://a.test/", StatusCode: 200, Body: section(body)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Digest(section(body))
	if err != nil || got != loc.PayloadDigest || got != sha1b32(body) {
		t.Errorf("Digest %s (%v), record %s, want %s", got, err, loc.PayloadDigest, sha1b32(body))
	}
}
