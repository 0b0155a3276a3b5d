package warc

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// rewrite writes rec with a Writer and reads the record back.
func rewrite(t *testing.T, rec *ReadRecord) (*ReadRecord, error) {
	t.Helper()
	w, err := NewWriter(Options{Dir: t.TempDir(), Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	_, werr := w.WriteRecord(Record{Type: rec.Get("WARC-Type"), Header: rec.Header, Block: section(rec.Block)})
	if err := errors.Join(werr, w.Close()); err != nil {
		return nil, err
	}
	back, err := readAll(w.Files()[0])
	if err != nil {
		return nil, err
	}
	if len(back) != 2 {
		return nil, fmt.Errorf("%d records read back, want warcinfo and one", len(back))
	}
	return back[1], nil
}

// kept is h without the fields named in skip (lower case).
func kept(h []Field, skip ...string) []Field {
	return slices.DeleteFunc(slices.Clone(h), func(f Field) bool { return slices.Contains(skip, strings.ToLower(f.Name)) })
}

// checkRoundTrip checks the round-trip property of a record read: written
// and read back, it keeps its type, its ID (if it has one), its block and
// its other fields in order, the Writer adding only what it computes
// (WARC-Block-Digest, Content-Length) or what was missing (WARC-Date,
// WARC-Warcinfo-ID); written and read back again, it is unchanged.
func checkRoundTrip(t *testing.T, rec *ReadRecord) {
	t.Helper()
	r2, err := rewrite(t, rec)
	if err != nil {
		t.Fatalf("the writer refused or garbled a record the reader accepted: %v\n%+v", err, rec.Header)
	}
	computed := []string{"warc-type", "warc-record-id", "content-length", "warc-block-digest"}
	added := computed
	for _, name := range []string{"warc-date", "warc-warcinfo-id"} {
		if !hasField(rec.Header, name) {
			added = append(slices.Clone(added), name)
		}
	}
	if got, want := kept(r2.Header, added...), kept(rec.Header, computed...); !slices.Equal(got, want) {
		t.Fatalf("fields read back %q, want %q", got, want)
	}
	var id string // the Writer keeps the last WARC-Record-ID given
	for _, f := range rec.Header {
		if strings.EqualFold(f.Name, "WARC-Record-ID") {
			id = f.Value
		}
	}
	if r2.Get("WARC-Type") != rec.Get("WARC-Type") || (id != "" && r2.Get("WARC-Record-ID") != id) || !bytes.Equal(r2.Block, rec.Block) {
		t.Fatalf("read back type %q, ID %q, %d-byte block; want %q, %q, %d bytes",
			r2.Get("WARC-Type"), r2.Get("WARC-Record-ID"), len(r2.Block), rec.Get("WARC-Type"), id, len(rec.Block))
	}
	r3, err := rewrite(t, r2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r3.Header, r2.Header) || !bytes.Equal(r3.Block, r2.Block) {
		t.Fatalf("second round trip changed the record:\n%q\n%q", r2.Header, r3.Header)
	}
}

func readOne(s string) (*ReadRecord, error) {
	r, err := NewReader(strings.NewReader(s))
	if err != nil {
		return nil, err
	}
	return r.Next()
}

// Read → write → read keeps what was read, for records that exercise the
// header syntax (continuations, spacing, repeated and computed fields).
func TestRoundTripProperty(t *testing.T) {
	for _, s := range []string{
		"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 3\r\n\r\nabc\r\n\r\n",
		"WARC/1.0\nWARC-Type: metadata\nA: b\n  continued\n\t\nB:\n  only\nC :  spaced  \nContent-Length: 0\n\n",
		"WARC/1.1\r\nWARC-Record-ID: <urn:x>\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:y>\r\nWARC-Date: 2026-01-01T00:00:00Z\r\nX: 1\r\nx: 2\r\nWARC-Block-Digest: sha1:nonsense\r\nContent-Length: 002\r\n\r\nhi",
		"WARC/1.1\r\nWARC-Type: a\r\nEmpty:\r\nNul: a\x00b\r\n" + "Content-Length: 0\r\n\r\n",
	} {
		rec, err := readOne(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		checkRoundTrip(t, rec)
	}
}

// Issue #23, defect 7 (FuzzReader's crasher, kept in
// testdata/fuzz/FuzzReader): the reader took "\r:" as a field with an
// empty name, which the writer wrote as ": " and the reader then refused.
// The reader refuses header lines whose field name is not a token or that
// hold a bare CR.
func TestReaderRefusesBadFields(t *testing.T) {
	for _, c := range []struct{ line, why string }{
		{"\r:", "empty field name"},
		{": x", "empty field name"},
		{":", "empty field name"},
		{"\r\t : x", "empty field name"},
		{"a b: x", "not a token"},
		{"a\x00: x", "not a token"},
		{"é: x", "not a token"},
		{"A: b\rc", "carriage return"},
	} {
		_, err := readOne("WARC/1.1\r\nWARC-Type: a\r\n" + c.line + "\r\nContent-Length: 0\r\n\r\n")
		if !errors.Is(err, ErrMalformed) || !strings.Contains(fmt.Sprint(err), c.why) {
			t.Errorf("header line %q: %v, want %v (%s)", c.line, err, ErrMalformed, c.why)
		}
	}
}

// The writer refuses what it could not write so that it reads back the
// same: field names that are not tokens, values with CR or LF or with
// white space at either end (the reader trims it).
func TestWriterRefusesBadFields(t *testing.T) {
	w, err := NewWriter(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, f := range []Field{{"", "x"}, {"a b", "x"}, {"a:b", "x"}, {"A", "x\r\nB: injected"}, {"A", "x\ny"}, {"A", " x"}, {"A", "x\t"}} {
		if _, err := w.WriteRecord(Record{Type: "resource", Header: []Field{f}}); !errors.Is(err, ErrBadField) {
			t.Errorf("field %q: %v, want %v", f, err, ErrBadField)
		}
	}
	for _, typ := range []string{" resource", "resource\r\nX: y"} {
		if _, err := w.WriteRecord(Record{Type: typ}); !errors.Is(err, ErrBadField) {
			t.Errorf("type %q: %v, want %v", typ, err, ErrBadField)
		}
	}
	if _, err := w.WriteFetch(Fetch{URL: "http://a.test/\r\nX: y", StatusCode: 200}); !errors.Is(err, ErrBadField) {
		t.Errorf("URL with CRLF: %v", err)
	}
	if _, err := w.WriteRecord(Record{Type: "resource", Header: []Field{{"A", "x y"}, {"Empty", ""}}, Block: section(nil)}); err != nil {
		t.Errorf("good fields: %v", err)
	}
	for _, o := range []Options{{Info: map[string]string{"a b": "x"}}, {Info: map[string]string{"k": "x\r\ny: z"}}, {Software: "s\r\nx: y"}} {
		o.Dir = t.TempDir()
		if _, err := NewWriter(o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("NewWriter(%+v): %v, want %v", o, err, ErrBadOptions)
		}
	}
}
