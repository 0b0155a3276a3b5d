package warc_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
)

// writeBodies writes one fetch of each body i in bodies (URL tag/i) and
// closes the writer.
func writeBodies(t *testing.T, o warc.Options, tag string, bodies []int) []warc.Location {
	t.Helper()
	w := newWriter(t, o)
	var locs []warc.Location
	for _, i := range bodies {
		loc, err := w.WriteFetch(warc.Fetch{URL: fmt.Sprintf("http://%s.test/%d", tag, i), StatusCode: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: section([]byte(fmt.Sprintf("<p>body %d</p>", i)))})
		if err != nil {
			t.Fatal(err)
		}
		locs = append(locs, loc)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return locs
}

// records returns the records of every WARC file in dir by ID, each
// file validated.
func records(t *testing.T, dir string) map[string]warctest.Rec {
	t.Helper()
	out := map[string]warctest.Rec{}
	for _, f := range files(t, dir) {
		recs, err := warctest.Validate(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			out[r.ID] = r
		}
	}
	return out
}

// The payload digests survive a restart: a second Writer on the same
// directory writes the payloads the first one archived as revisit records
// referring to the first one's records (URI and date included), after a
// torn line at the end of the digest file (kill -9) is skipped.
func TestRevisitMemoryAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	o := warc.Options{Dir: dir, NodeID: "nr"}
	first := writeBodies(t, o, "a", []int{0, 1, 2, 3, 4})
	digests := filepath.Join(dir, "sextant-nr.digests")
	f, err := os.OpenFile(digests, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("no digest file: %v", err)
	}
	f.WriteString("sha1:TORN <urn:uuid:torn")
	f.Close()
	second := writeBodies(t, o, "b", []int{0, 1, 2, 3, 4, 5})
	recs := records(t, dir)
	for i, l := range second {
		if want := i < 5; l.Revisit != want {
			t.Errorf("fetch %d after the restart: revisit %v, want %v", i, l.Revisit, want)
			continue
		}
		if i == 5 {
			continue
		}
		rv, orig := recs[l.RecordID], recs[first[i].RecordID]
		if rv.RefersTo != first[i].RecordID || rv.Header["WARC-Refers-To-Target-URI"] != orig.URI ||
			rv.Header["WARC-Refers-To-Date"] != orig.Header["WARC-Date"] || rv.PayloadDigest != orig.PayloadDigest {
			t.Errorf("revisit %v does not refer to %v", rv.Header, orig.Header)
		}
	}
	b, _ := os.ReadFile(digests)
	if strings.Contains(string(b), "TORN") || strings.Count(string(b), "\n") != 6 {
		t.Errorf("digest file after the restart:\n%s", b)
	}
}

// The digest file is bounded by RevisitMemory: it is rewritten once it
// holds twice as many lines, and a restart remembers only the newest.
func TestRevisitMemoryBounded(t *testing.T) {
	dir := t.TempDir()
	o := warc.Options{Dir: dir, NodeID: "nb", RevisitMemory: 3}
	writeBodies(t, o, "a", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	b, err := os.ReadFile(filepath.Join(dir, "sextant-nb.digests"))
	if err != nil || strings.Count(string(b), "\n") > 6 {
		t.Fatalf("digest file (%v), want at most 6 lines:\n%s", err, b)
	}
	locs := writeBodies(t, o, "b", []int{9, 8, 7, 0, 1})
	for i, l := range locs {
		if want := i < 3; l.Revisit != want {
			t.Errorf("fetch %d: revisit %v, want %v (only the 3 newest digests kept)", i, l.Revisit, want)
		}
	}
}
