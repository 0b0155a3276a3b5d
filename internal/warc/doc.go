// Package warc writes crawled fetches as WARC/1.1 files (ISO 28500:2017,
// "The WARC Format 1.1", IIPC), indexes them as CDXJ and reads them back.
//
// # Writing
//
// A Writer owns the files PREFIX-NODEID-TIMESTAMP-SERIAL.warc.gz of a
// directory (Heritrix's naming; TIMESTAMP has 17 digits, milliseconds),
// each opened with a warcinfo record (software, format and Options.Info:
// the crawl's settings) and renamed from .warc.gz.open when it passes
// MaxSize or when the Writer closes. Every other record of a file names
// that warcinfo record in WARC-Warcinfo-ID (a record compressed just
// before a rotation is rewritten by the writer goroutine to name the file
// it lands in). Every record is its own gzip member,
// so a file can be read from any record's offset (what CDX indexes rely
// on), compressed as Options.Compression says; "store" writes stored
// deflate blocks, so its files are .warc.gz like the others, which every
// reader and the crash repair read alike. A response whose body is already
// compressed (precompressed.go) is stored whatever the setting.
//
// WriteFetch writes a response record and its request record (linked by
// WARC-Concurrent-To), and a metadata record of the page's outlinks if
// given. The response is recorded as received: the status line and
// header the server sent (net/http's canonical names, in sorted order:
// it keeps no order), the body still content-encoded (gzip, br...) and
// without its transfer coding (WARC 1.1 §6.3.2), WARC-Truncated: length
// when a size cap cut it. WARC-Payload-Digest is the SHA-1 (base32) of
// that body, WARC-Block-Digest of the whole block. A payload already
// written by this Writer (remembered among the last RevisitMemory
// digests) is written as a revisit record (identical-payload-digest
// profile, WARC-Refers-To, -Target-URI, -Date) holding only the HTTP head.
// The remembered digests are kept in PREFIX-NODEID.digests beside the
// files and read back by NewWriter, so a resumed crawl still writes
// revisits for payloads archived before it stopped (revisit.go).
//
// Pipeline: callers compute digests and compress their records in their
// own goroutine; one writer goroutine appends them to the file, flushes
// once per batch of waiting calls and rotates files; the queue (Options.
// Queue) is bounded, so a slow disk slows the callers instead of growing
// memory. WriteFetch returns once its records are in the file (written to
// the OS, so they survive kill -9 of the process; not fsynced) with their
// Location: file name, offset and length of the response record's member,
// record ID, payload digest — what a crawl log line needs. StartFetch
// splits the call: it compresses and queues at once and returns the wait,
// so that the caller can work while the writer writes.
//
// Crash repair: NewWriter closes the files of its Prefix and NodeID that
// a crash left open, cut after their last complete record (a torn member
// or a member that is not one whole record is removed), and indexes them.
// Several Writers (nodes) may share a directory with distinct NodeIDs.
//
// # Indexes
//
// Beside each file, NAME.cdxj has one line per response and revisit
// record: the SURT key (see SURT), a 14-digit timestamp and a JSON block
// with url, mime, status, digest, length, offset and filename, as pywb
// reads them; lines are sorted when the file closes. IndexLines and
// WriteIndex rebuild an index from a file (crawler cdx).
//
// # Caller's duties and concurrency
//
// A Writer is safe for concurrent use and must be Closed: Close writes
// what is queued, closes the current file and waits for the writer
// goroutine. After Close every write fails with ErrClosed. A write error
// (disk full) is sticky: the file's tail is then unknown, and the caller
// should stop (a crawl node treats it like a crawl log failure). Bodies are
// read twice (digest, then compression), so they are given as
// *io.SectionReader.
//
// # Reading
//
// Reader reads WARC 1.0 and 1.1 records from plain or gzip files (any
// number of members); ScanMembers walks a .warc.gz member by member with
// exact offsets. Both are fuzzed.
//
// Header fields: Reader and Writer take the same fields, so that a record
// read, written and read again keeps its fields (the property FuzzReader
// checks). A field name is a token; a value holds no CR or LF and is
// trimmed (continuation lines are joined with one space). Reader refuses
// other header lines with ErrMalformed; Writer refuses such fields, and
// values with white space at either end, with ErrBadField.
package warc
