// Package warctest checks WARC files with two independent readers, for
// the tests of the packages that write them: github.com/nlnwa/gowarc in
// strict mode (every syntax error and specification violation fails, block
// and payload digests recomputed) and github.com/internetarchive/gowarc
// (records re-read, digests recomputed here from its bytes). It is imported
// only by tests.
package warctest

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"io"
	"os"
	"sync"

	iawarc "github.com/internetarchive/gowarc"
	nlwarc "github.com/nlnwa/gowarc/v3"
)

// Rec is one record as both readers saw it.
type Rec struct {
	Type, ID, URI string
	PayloadDigest string
	ConcurrentTo  string
	RefersTo      string
	Truncated     string
	Offset, Size  int64  // of its gzip member
	Block         []byte // the record block
	Header        map[string]string
}

// SHA1 is "sha1:" and the base32 SHA-1 of b, as WARC digests are written.
func SHA1(b []byte) string {
	s := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

// mu runs one validation at a time: neither reader is safe for concurrent
// use in one process, as parallel tests checking their archives use them.
// internetarchive/gowarc's readUntilDelim (v0.8.101) returns a header line
// inside a buffer it has already put back in a package-wide sync.Pool, so
// readers garble each other's lines (a record "without" WARC-Block-Digest:
// TestValidateConcurrent); nlnwa/gowarc's options write google/uuid's
// global rand-pool switch on every reader (a data race under -race).
var mu sync.Mutex

// Validate reads path with both readers and returns its records, or the
// first problem either found.
func Validate(path string) ([]Rec, error) {
	mu.Lock()
	defer mu.Unlock()
	if err := strict(path); err != nil {
		return nil, fmt.Errorf("nlnwa/gowarc strict: %s: %w", path, err)
	}
	recs, err := ia(path)
	if err != nil {
		return nil, fmt.Errorf("internetarchive/gowarc: %s: %w", path, err)
	}
	return recs, nil
}

func strict(path string) error {
	r, err := nlwarc.NewWarcFileReader(path, 0, nlwarc.WithStrictValidation())
	if err != nil {
		return err
	}
	defer r.Close()
	for i := 0; ; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("record %d at %d: %w", i, rec.Offset, err)
		}
		if len(rec.Validation) > 0 {
			return fmt.Errorf("record %d at %d: %v", i, rec.Offset, rec.Validation)
		}
		v, err := rec.WarcRecord.ValidateDigest()
		if err == nil && len(v) > 0 {
			err = fmt.Errorf("%v", v)
		}
		if err != nil {
			return fmt.Errorf("record %d at %d (%s): digest: %w", i, rec.Offset, rec.WarcRecord.Type(), err)
		}
		rec.WarcRecord.Close()
	}
}

func ia(path string) ([]Rec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := iawarc.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Rec
	for {
		rec, err := r.ReadRecord()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rec.Content)
		rec.Content.Close()
		if err != nil {
			return nil, err
		}
		h := rec.Header
		x := Rec{
			Type: h.Get("WARC-Type"), ID: h.Get("WARC-Record-ID"), URI: h.Get("WARC-Target-URI"),
			PayloadDigest: h.Get("WARC-Payload-Digest"), ConcurrentTo: h.Get("WARC-Concurrent-To"),
			RefersTo: h.Get("WARC-Refers-To"), Truncated: h.Get("WARC-Truncated"),
			Offset: rec.Offset, Size: rec.Size, Block: b, Header: map[string]string{},
		}
		for k, v := range h {
			x.Header[k] = v
		}
		if got := h.Get("WARC-Block-Digest"); got != SHA1(b) {
			return nil, fmt.Errorf("record %s: block digest %s, recomputed %s", x.ID, got, SHA1(b))
		}
		if x.Type == "response" {
			_, body, ok := bytes.Cut(b, []byte("\r\n\r\n"))
			if !ok {
				return nil, fmt.Errorf("record %s: no HTTP head", x.ID)
			}
			if x.PayloadDigest != SHA1(body) {
				return nil, fmt.Errorf("record %s: payload digest %s, recomputed %s", x.ID, x.PayloadDigest, SHA1(body))
			}
		}
		out = append(out, x)
	}
}

// ValidateAll validates every file and returns their records in order.
func ValidateAll(paths []string) ([]Rec, error) {
	var all []Rec
	for _, p := range paths {
		recs, err := Validate(p)
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	return all, nil
}
