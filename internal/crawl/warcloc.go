package crawl

import (
	"crypto/sha1"
	"encoding/base32"
	"io"
)

// warcLoc is where a fetch's response record went: the crawl log's
// warc= field and, when the archive knows it, the payload digest of the
// entity as archived (digest=).
type warcLoc struct {
	file   string // WARC file name (base name), "" if not archived
	offset int64  // offset of the record's first byte in file
	digest string // "sha1:BASE32", "" if the writer does not say
}

// WARCLocator is what a WARCWriter may also implement to have the crawl
// log record where each response went: the file and offset of the record
// WriteFetch returned the ID of, and its WARC-Payload-Digest ("" to let
// the crawl compute one). A writer that does not implement it leaves the
// warc= field out. Called right after WriteFetch by the same worker.
type WARCLocator interface {
	Location(recordID string) (file string, offset int64, payloadDigest string, ok bool)
}

// warcLocOf asks the node's WARC writer where the record rid went (the
// hook for writers that can say; see WARCLocator).
func (w *worker) warcLocOf(rid string) warcLoc {
	l, ok := w.n.opts.WARC.(WARCLocator)
	if !ok {
		return warcLoc{}
	}
	file, off, digest, ok := l.Location(rid)
	if !ok {
		return warcLoc{}
	}
	return warcLoc{file: file, offset: off, digest: digest}
}

// payloadDigest is Heritrix's crawl-log digest of a body: "sha1:" and the
// base32 SHA-1 of its bytes. The fetcher hands over the body decoded (no
// Content-Encoding), so for a compressed response this differs from the
// WARC-Payload-Digest of the bytes as sent; a WARCLocator's digest, when
// there is one, is logged instead.
func payloadDigest(r io.Reader) (string, error) {
	h := sha1.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return "sha1:" + base32.StdEncoding.EncodeToString(h.Sum(nil)), nil
}
