// Package warc writes crawled fetches as WARC/1.1 files (ISO 28500:2017,
// "The WARC Format 1.1", IIPC) and reads WARC files back.
//
// # Writing
//
// A Writer owns a directory and writes files named
// <Prefix>-<YYYYMMDDhhmmss>-<serial>.warc.gz, each opened with a warcinfo
// record (which every other record of the file names in WARC-Warcinfo-ID)
// and closed (renamed from .warc.gz.open) when it passes MaxSize or
// when the Writer closes. Every record is its own gzip member, so a file
// can be read from any record's offset (what CDX indexes rely on).
//
// WriteFetch writes a response record and its request record (linked by
// WARC-Concurrent-To), each with WARC-Block-Digest and the response with
// WARC-Payload-Digest: "sha1:" and the base32 SHA-1, as every WARC tool
// writes them.
//
// Decoded payloads: the crawler keeps a response body only after removing
// its Content-Encoding (gzip, br, zstd) and Transfer-Encoding (chunked), so
// the response record holds the DECODED body. To keep the record a valid
// HTTP message, WriteFetch removes Content-Encoding and Transfer-Encoding
// from the recorded headers, sets Content-Length to the decoded length, and
// keeps the original values as X-Sextant-Orig-Content-Encoding,
// X-Sextant-Orig-Transfer-Encoding and X-Sextant-Orig-Content-Length (the
// convention of archives that rewrite headers: original value under a
// prefixed name). The payload digest is therefore the digest of the decoded
// body. Fetch.Raw turns this off for bodies that were not decoded.
//
// # Caller's duties and concurrency
//
// One Writer per node; WriteFetch and WriteRecord are safe for concurrent
// use (digests are computed outside the lock, records are written whole
// under it). Close flushes and closes the current file; after Close every
// write fails with ErrClosed. Bodies are read twice (digest, then write),
// so they are given as *io.SectionReader (the fetcher's
// RewindBuffer.NewReader()).
//
// # Reading
//
// Reader reads WARC 1.0 and 1.1 records from plain or gzip files (any
// number of members); it is what the tests use to round-trip files, and is
// fuzzed.
//
// Header fields: Reader and Writer take the same fields, so that a record
// read, written and read again keeps its fields (the property FuzzReader
// checks). A field name is a token; a value holds no CR or LF and is
// trimmed (continuation lines are joined with one space). Reader refuses
// other header lines with ErrMalformed; Writer refuses such fields, and
// values with white space at either end, with ErrBadField.
package warc
