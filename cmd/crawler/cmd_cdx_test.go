package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/warc"
)

// crawler cdx rebuilds, byte for byte, the index the Writer wrote beside
// a file; a bad argument is an error.
func TestCDXCommand(t *testing.T) {
	dir := t.TempDir()
	w, err := warc.NewWriter(warc.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		body := []byte("page " + strconv.Itoa(i%3))
		if _, err := w.WriteFetch(warc.Fetch{URL: "http://example.test/p" + strconv.Itoa(i), StatusCode: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: io.NewSectionReader(bytes.NewReader(body), 0, int64(len(body)))}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	fs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	idx := strings.TrimSuffix(fs[0], ".warc.gz") + ".cdxj"
	want, err := os.ReadFile(idx)
	if err != nil || bytes.Count(want, []byte("\n")) != 5 {
		t.Fatalf("index %q: %v", want, err)
	}
	os.Remove(idx)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"cdx", fs[0]}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	if got, _ := os.ReadFile(idx); !bytes.Equal(got, want) {
		t.Errorf("rebuilt index:\n%s\nwritten:\n%s", got, want)
	}
	if !strings.Contains(out.String(), ": 5 lines") {
		t.Errorf("output %q", out.String())
	}
	if code := run(context.Background(), []string{"cdx", filepath.Join(dir, "missing.warc.gz")}, &out, &errOut); code == 0 {
		t.Error("a missing file: exit 0")
	}
	if code := run(context.Background(), []string{"cdx"}, &out, &errOut); code != 2 {
		t.Errorf("no file: exit %d, want 2 (usage)", code)
	}
}
