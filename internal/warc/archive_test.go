package warc_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
)

func section(b []byte) *io.SectionReader {
	return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
}

func newWriter(t *testing.T, o warc.Options) *warc.Writer {
	t.Helper()
	w, err := warc.NewWriter(o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(fs)
	return fs
}

// fetchOne fetches url with a fetcher keeping the body as received and
// archives it.
func fetchOne(t *testing.T, w *warc.Writer, fo fetcher.Options, url string) warc.Location {
	t.Helper()
	fo.AllowPrivate, fo.KeepWire = true, true
	ft, err := fetcher.New(fo)
	if err != nil {
		t.Fatal(err)
	}
	defer ft.Close()
	resp, err := ft.Fetch(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	loc, err := w.WriteFetch(warc.Fetch{URL: url, RequestHeader: resp.RequestHeader, Proto: resp.Proto,
		StatusCode: resp.Status, Status: resp.StatusText, Header: resp.Header, Body: resp.WireBody(), Truncated: resp.Truncated})
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// A gzip-encoded response is archived as the server sent it: its payload
// digest is the SHA-1 of the compressed bytes (computed here, not by the
// package), its head keeps Content-Encoding and Content-Length, and the
// request record holds the headers the fetcher sent. Both readers agree.
func TestGzipResponseArchivedAsSent(t *testing.T) {
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(bytes.Repeat([]byte("<p>compressed page</p>\n"), 200))
	zw.Close()
	sent := zb.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Header().Set("Content-Encoding", "gzip")
		rw.Header().Set("Content-Length", strconv.Itoa(len(sent)))
		rw.Header().Set("X-Server-Said", "this")
		rw.Write(sent)
	}))
	defer srv.Close()
	dir := t.TempDir()
	w := newWriter(t, warc.Options{Dir: dir})
	loc := fetchOne(t, w, fetcher.Options{UserAgent: "sextant-test/1 (+http://example.test/bot)"}, srv.URL+"/page")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := warctest.SHA1(sent) // independent of the package's digest code
	if loc.PayloadDigest != want {
		t.Errorf("Location payload digest %s, want SHA-1 of the bytes sent %s", loc.PayloadDigest, want)
	}
	recs, err := warctest.Validate(files(t, dir)[0])
	if err != nil {
		t.Fatal(err)
	}
	var resp, req *warctest.Rec
	for i := range recs {
		switch recs[i].Type {
		case "response":
			resp = &recs[i]
		case "request":
			req = &recs[i]
		}
	}
	if resp == nil || req == nil {
		t.Fatalf("records %v", recs)
	}
	if resp.PayloadDigest != want {
		t.Errorf("record payload digest %s, want %s", resp.PayloadDigest, want)
	}
	head, body, _ := bytes.Cut(resp.Block, []byte("\r\n\r\n"))
	if !bytes.Equal(body, sent) {
		t.Errorf("archived body is not the compressed bytes sent (%d bytes, sent %d)", len(body), len(sent))
	}
	for _, h := range []string{"Content-Encoding: gzip", "Content-Length: " + strconv.Itoa(len(sent)), "X-Server-Said: this", "Content-Type: text/html; charset=utf-8"} {
		if !bytes.Contains(head, []byte("\r\n"+h)) {
			t.Errorf("response head lacks %q: %q", h, head)
		}
	}
	for _, h := range []string{"User-Agent: sextant-test/1 (+http://example.test/bot)", "Accept-Encoding: gzip, br, zstd", "Host: "} {
		if !bytes.Contains(req.Block, []byte(h)) {
			t.Errorf("request record lacks %q: %q", h, req.Block)
		}
	}
	if resp.Offset != loc.Offset || resp.Size != loc.Length {
		t.Errorf("Location %+v, record at %d size %d", loc, resp.Offset, resp.Size)
	}
}

// A body cut by the body cap is marked WARC-Truncated: length; a chunked
// response is stored de-chunked without Transfer-Encoding.
func TestTruncatedAndChunked(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 10000)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/chunked" {
			rw.Write(big[:100])
			rw.(http.Flusher).Flush() // no Content-Length: chunked
			rw.Write(big[:100])
			return
		}
		rw.Write(big)
	}))
	defer srv.Close()
	dir := t.TempDir()
	w := newWriter(t, warc.Options{Dir: dir})
	fetchOne(t, w, fetcher.Options{BodyCap: 1000}, srv.URL+"/big")
	fetchOne(t, w, fetcher.Options{}, srv.URL+"/chunked")
	w.Close()
	recs, err := warctest.Validate(files(t, dir)[0])
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Type != "response" {
			continue
		}
		n++
		_, body, _ := bytes.Cut(r.Block, []byte("\r\n\r\n"))
		switch {
		case strings.HasSuffix(r.URI, "/big"):
			if r.Truncated != "length" || len(body) != 1000 {
				t.Errorf("truncated record: WARC-Truncated %q, %d body bytes", r.Truncated, len(body))
			}
		case strings.HasSuffix(r.URI, "/chunked"):
			if r.Truncated != "" || len(body) != 200 || bytes.Contains(r.Block, []byte("Transfer-Encoding")) {
				t.Errorf("chunked record: WARC-Truncated %q, %d body bytes, block %q", r.Truncated, len(body), r.Block)
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d responses", n)
	}
}

// writeMany writes n fetches with a few repeated bodies (revisits),
// rotating often.
func writeMany(t *testing.T, dir string, n int) (*warc.Writer, []warc.Location) {
	t.Helper()
	w := newWriter(t, warc.Options{Dir: dir, MaxSize: 6 << 10, NodeID: "nt"})
	var locs []warc.Location
	for i := 0; i < n; i++ {
		body := []byte(fmt.Sprintf("<html>page %d %s</html>", i%7, strings.Repeat("y", i%7*50)))
		loc, err := w.WriteFetch(warc.Fetch{URL: fmt.Sprintf("http://www.h%d.test/p?b=2&a=%d", i%3, i), StatusCode: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: section(body), Outlinks: []string{"http://x.test/o"}})
		if err != nil {
			t.Fatal(err)
		}
		locs = append(locs, loc)
	}
	return w, locs
}

// Identical payloads after the first become revisit records referring to
// it; CDXJ lines are exactly the response and revisit records, sorted, and
// each offset seeks to its record; crawler cdx's rebuild gives the same
// lines.
func TestRevisitsAndCDXJ(t *testing.T) {
	dir := t.TempDir()
	w, locs := writeMany(t, dir, 40)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Revisits != 33 || st.Fetches != 40 {
		t.Errorf("stats %+v: want 33 revisits of 40", st)
	}
	fs := files(t, dir)
	if len(fs) < 3 {
		t.Fatalf("%d files: no rotation", len(fs))
	}
	ids := map[string]bool{}
	byFile := map[string]map[int64]warctest.Rec{}
	nIndexed := 0
	for _, f := range fs {
		base := filepath.Base(f)
		if !strings.HasPrefix(base, "sextant-nt-") || len(strings.Split(strings.TrimSuffix(base, ".warc.gz"), "-")) != 4 {
			t.Errorf("file name %s, want sextant-nt-TIMESTAMP-SERIAL.warc.gz", base)
		}
		recs, err := warctest.Validate(f)
		if err != nil {
			t.Fatal(err)
		}
		byFile[base] = map[int64]warctest.Rec{}
		for _, r := range recs {
			ids[r.ID] = true
			byFile[base][r.Offset] = r
			if r.Type == "response" || r.Type == "revisit" {
				nIndexed++
			}
			if r.Type == "revisit" {
				if !ids[r.RefersTo] || r.Header["WARC-Profile"] != warc.ProfileIdenticalPayload || r.Header["WARC-Refers-To-Target-URI"] == "" {
					t.Errorf("revisit %v does not refer to an earlier record", r.Header)
				}
			}
		}
	}
	for _, l := range locs {
		r, ok := byFile[l.File][l.Offset]
		if !ok || r.ID != l.RecordID || r.Size != l.Length || (r.Type == "revisit") != l.Revisit {
			t.Errorf("Location %+v: record there %+v", l, r.Header)
		}
	}
	lines := 0
	for _, f := range fs {
		idx := strings.TrimSuffix(f, ".warc.gz") + ".cdxj"
		b, err := os.ReadFile(idx)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.SplitAfter(string(b), "\n")
		got = got[:len(got)-1]
		if !sort.StringsAreSorted(got) {
			t.Errorf("%s is not sorted", idx)
		}
		rebuilt, err := warc.IndexLines(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(rebuilt, "") != string(b) {
			t.Errorf("%s: rebuilt index differs:\n%s\nwritten:\n%s", f, strings.Join(rebuilt, ""), b)
		}
		for _, line := range got {
			lines++
			checkCDXJLine(t, dir, line)
		}
	}
	if lines != nIndexed || lines != 40 {
		t.Errorf("%d CDXJ lines, %d response+revisit records, 40 fetches", lines, nIndexed)
	}
}

// checkCDXJLine seeks to the line's offset and reads the record there.
func checkCDXJLine(t *testing.T, dir, line string) {
	t.Helper()
	parts := strings.SplitN(line, " ", 3)
	if len(parts) != 3 || len(parts[1]) != 14 {
		t.Fatalf("CDXJ line %q", line)
	}
	var j struct{ URL, Mime, Status, Digest, Length, Offset, Filename string }
	if err := json.Unmarshal([]byte(parts[2]), &j); err != nil {
		t.Fatal(err)
	}
	if parts[0] != warc.SURT(j.URL) || !strings.HasPrefix(parts[0], "test,h") {
		t.Errorf("key %q for %s", parts[0], j.URL)
	}
	off, _ := strconv.ParseInt(j.Offset, 10, 64)
	n, _ := strconv.ParseInt(j.Length, 10, 64)
	f, err := os.Open(filepath.Join(dir, j.Filename))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []warc.Member
	if err := warc.ScanMembers(io.NewSectionReader(f, off, n), func(m warc.Member) error {
		got = append(got, m)
		return nil
	}); err != nil || len(got) != 1 {
		t.Fatalf("%s at %d+%d: %d records, %v", j.Filename, off, n, len(got), err)
	}
	r := got[0].Record
	typ := r.Get("WARC-Type")
	if r.Get("WARC-Target-URI") != j.URL || "sha1:"+j.Digest != r.Get("WARC-Payload-Digest") ||
		(typ == "revisit") != (j.Mime == "warc/revisit") || (typ != "revisit" && (j.Mime != "text/html" || j.Status != "200")) {
		t.Errorf("line %q: record %v", line, r.Header)
	}
}

// A file a crash left open with a torn last record is cut after its last
// complete record when the next Writer opens: it validates, keeps every
// complete record, and its index is rebuilt.
func TestRepairTornFile(t *testing.T) {
	for _, tear := range []int{1, 10, 100, -1} {
		t.Run(strconv.Itoa(tear), func(t *testing.T) {
			src := t.TempDir()
			w, locs := writeMany(t, src, 3) // still open: the crash
			open, _ := filepath.Glob(filepath.Join(src, "*.warc.gz.open"))
			if len(open) != 1 {
				t.Fatalf("open files %v", open)
			}
			b, err := os.ReadFile(open[0])
			if err != nil {
				t.Fatal(err)
			}
			last := locs[len(locs)-1]
			keep := last.Offset // the last fetch's records are torn
			if tear >= 0 {
				b = b[:keep+int64(tear)]
			} else {
				b = append(b, 0x1f, 0x8b, 8) // a member's first bytes
				keep = int64(len(b) - 3)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(open[0])), b, 0o644); err != nil {
				t.Fatal(err)
			}
			w.Close()
			w2 := newWriter(t, warc.Options{Dir: dir, NodeID: "nt"})
			st := w2.Stats()
			if st.Repaired != 1 || st.CutBytes != int64(len(b))-keep {
				t.Errorf("stats %+v, want 1 repaired, %d bytes cut", st, int64(len(b))-keep)
			}
			if _, err := w2.WriteFetch(warc.Fetch{URL: "http://after.test/", StatusCode: 204}); err != nil {
				t.Fatal(err)
			}
			w2.Close()
			fs := files(t, dir)
			if len(fs) != 2 {
				t.Fatalf("files %v", fs)
			}
			if !strings.HasSuffix(fs[1], "-00002.warc.gz") {
				t.Errorf("serial after repair: %s", fs[1])
			}
			all, err := warctest.ValidateAll(fs)
			if err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, r := range all {
				if r.Type == "response" || r.Type == "revisit" {
					uris = append(uris, r.URI)
				}
			}
			want := []string{"http://www.h0.test/p?b=2&a=0", "http://www.h1.test/p?b=2&a=1", "http://after.test/"}
			if tear < 0 {
				want = []string{"http://www.h0.test/p?b=2&a=0", "http://www.h1.test/p?b=2&a=1", "http://www.h2.test/p?b=2&a=2", "http://after.test/"}
			}
			if strings.Join(uris, " ") != strings.Join(want, " ") {
				t.Errorf("responses %v, want %v", uris, want)
			}
			idx, err := os.ReadFile(strings.TrimSuffix(fs[0], ".warc.gz") + ".cdxj")
			if err != nil || bytes.Count(idx, []byte("\n")) != len(want)-1 {
				t.Errorf("index of the repaired file: %q %v", idx, err)
			}
		})
	}
}

func TestSURT(t *testing.T) {
	for in, want := range map[string]string{
		"http://www.Example.com/A/b?z=1&a=2#f": "com,example)/a/b?a=2&z=1",
		"https://example.com":                  "com,example)/",
		"http://sub.example.com:8080/x":        "com,example,sub:8080)/x",
		"http://example.com:80/":               "com,example)/",
		"http://127.0.0.1:8080/p":              "127.0.0.1:8080)/p",
		"http://www2.example.co.uk/":           "uk,co,example)/",
		"http://www.com/":                      "com,www)/",
		"not a url":                            "not a url",
	} {
		if got := warc.SURT(in); got != want {
			t.Errorf("SURT(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzSURT(f *testing.F) {
	for _, s := range []string{"http://www.example.com/a?b=1&a=2", "https://[::1]:8443/x", "http://a..b/", "%zz", "http://x/?&&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := warc.SURT(s)
		if strings.ContainsAny(k, " \n") && !strings.ContainsAny(s, " \n") {
			t.Errorf("SURT(%q) = %q holds a separator the input lacked", s, k)
		}
		if k != strings.ToLower(k) {
			t.Errorf("SURT(%q) = %q is not lower-case", s, k)
		}
	})
}

// FuzzScanMembers: any input is scanned without panic; members reported
// tile the input from offset 0, and each re-scans alone to the same record.
func FuzzScanMembers(f *testing.F) {
	dir := f.TempDir()
	w, err := warc.NewWriter(warc.Options{Dir: dir})
	if err != nil {
		f.Fatal(err)
	}
	w.WriteFetch(warc.Fetch{URL: "http://a.test/", StatusCode: 200, Body: section([]byte("hello"))})
	w.Close()
	fs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	good, _ := os.ReadFile(fs[0])
	f.Add(good)
	f.Add(good[:len(good)-5])
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte("WARC/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var end int64
		_ = warc.ScanMembers(bytes.NewReader(b), func(m warc.Member) error {
			if m.Offset != end || m.Length <= 0 || m.Offset+m.Length > int64(len(b)) {
				t.Fatalf("member at %d+%d, previous ended at %d, input %d", m.Offset, m.Length, end, len(b))
			}
			end = m.Offset + m.Length
			var again []warc.Member
			if err := warc.ScanMembers(bytes.NewReader(b[m.Offset:end]), func(m2 warc.Member) error {
				again = append(again, m2)
				return nil
			}); err != nil || len(again) != 1 || again[0].Record.Get("WARC-Record-ID") != m.Record.Get("WARC-Record-ID") {
				t.Fatalf("member at %d does not re-scan alone: %v", m.Offset, err)
			}
			return nil
		})
	})
}
