package warc_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-crawler/sextant/internal/warc"
)

// The open index and the digest file are not flushed per write (writer.go,
// revisit.go): what a crash leaves is the WARC file's records, in the OS
// when WriteFetch returned. A copy of the directory taken then, without
// Close (kill -9), reopens to a file indexed in full, one CDXJ line per
// fetch, and the WARC records validate.
func TestCrashedFileIndexedInFull(t *testing.T) {
	dir := t.TempDir()
	w := newWriter(t, warc.Options{Dir: dir})
	defer w.Close()
	const n = 40
	for i := range n {
		if _, err := w.WriteFetch(warc.Fetch{URL: fmt.Sprintf("http://crash.test/%d", i), StatusCode: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: section([]byte(fmt.Sprintf("<p>body %d</p>", i)))}); err != nil {
			t.Fatal(err)
		}
	}
	crashed := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w2 := newWriter(t, warc.Options{Dir: crashed})
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w2.Stats(); st.Repaired != 1 {
		t.Errorf("repaired %d files, want 1", st.Repaired)
	}
	idx, _ := filepath.Glob(filepath.Join(crashed, "*.cdxj"))
	lines := 0
	for _, f := range idx {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines != n {
		t.Errorf("%d CDXJ lines in %v, want %d", lines, idx, n)
	}
	if recs := records(t, crashed); len(recs) != 2*n+1 {
		t.Errorf("%d records, want %d", len(recs), 2*n+1)
	}
}
