package crawl

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/internal/logging"
)

// LogEntry is one line of the crawl log: one fetch attempt.
type LogEntry struct {
	Time        time.Time
	Node        string
	URL         string
	Status      int // HTTP status, or a negative outcome code (see Outcome)
	Outcome     string
	Bytes       int64
	ContentType string
	Duration    time.Duration
	Links       int
	Note        string // e.g. the redirect target, or the error
	// Epoch is the membership epoch of the view the node fetched under (a
	// cluster member's log; 0 elsewhere). A line is written while the node
	// acts on that view, so the view's owner of the URL's host is the node.
	Epoch uint64
	// Robots holds the robots directives of a fetched page (its robots
	// <meta> and X-Robots-Tag headers) as extract.Directives.String
	// writes them: "noindex", "nofollow" or "noindex,nofollow"; "" if
	// none. Canonical is the canonical URL the page declares (a Link
	// header's rel=canonical, else its <link rel=canonical>), or "".
	Robots    string
	Canonical string
	// How the URL was reached (annot.go): Via is the URL it was found on
	// ("" for a seed, or a URL queued before vias were kept), Hops its
	// hop path from the seed in Heritrix letters (hoppath.go; "" for a
	// seed). A robots.txt line's via is the URL that needed it, and its
	// hop path that URL's plus HopPrereq.
	Via  string
	Hops string
	// Digest is the payload digest of a fetched body, "sha1:" and base32
	// (see payloadDigest); Proto the response's protocol ("HTTP/1.1",
	// "HTTP/2.0"). WARCFile and WARCOffset locate the response record
	// when the node archives (WARCLocator); WARCFile is "" otherwise.
	Digest     string
	Proto      string
	WARCFile   string
	WARCOffset int64
}

// CrawlLog appends one line per fetch to a file, Heritrix-style:
//
//	TIME NODE STATUS BYTES DURATION_MS LINKS OUTCOME URL CONTENT-TYPE NOTE [EPOCH] [robots=R] [canonical=C]
//	    [via=V] [hops=H] [digest=D] [proto=P] [warc=FILE:OFFSET]
//
// EPOCH, the membership epoch (LogEntry.Epoch), is written by cluster
// members only (SetEpochSource); lines without it parse with Epoch 0.
// The keyed fields (LogEntry.Robots, Canonical, Via, Hops, Digest, Proto,
// WARCFile and WARCOffset) are written, in that order, only when not empty, so a line without
// them is byte for byte what earlier versions wrote, and their logs parse.
//
// Each text field is escaped and capped (see appendField and the Log…
// bounds): an empty field is "-", a space is written '_', other control
// bytes %XX, and a field over its bound is cut and ends with LogEllipsis.
// So no fetched byte can break the line format, and one hostile header (a
// 200 KB Location) cannot write a 200 KB line.
//
// Each line is written with one write(2) on an O_APPEND file so that a
// kill -9 loses at most the line being written; OpenCrawlLog cuts such a
// torn line before appending. CrawlLog is safe for concurrent use and must
// be Closed.
type CrawlLog struct {
	mu     sync.Mutex
	w      io.Writer
	f      *os.File
	buf    []byte
	epoch  func() uint64 // fills in LogEntry.Epoch when it is 0
	maxURL int           // the URL field's bound; 0: defaultLogURLLength
}

// Bounds of the crawl log's text fields, in bytes as written (escaped,
// LogEllipsis included). The URL field's bound is the crawl's longest URL
// (SetMaxURLLength), so that every URL the crawl fetches is logged whole.
const (
	// MaxLogURLLength bounds the URL field when the crawl's URLs are
	// unbounded (MaxURLLength -1) or bounded above it.
	MaxLogURLLength = 64 << 10
	// LogNoteSlack is how much longer than the URL bound NOTE may be: it
	// holds a redirect target or an error, which may quote a URL.
	LogNoteSlack = 512
	// LogContentTypeLength bounds CONTENT-TYPE (RFC 6838 allows 127 bytes
	// each for type and subtype; parameters get the rest).
	LogContentTypeLength = 256
	// LogShortLength bounds NODE and OUTCOME (an ID and a constant).
	LogShortLength = 128
	// LogEllipsis ends a cut field. Canonical URLs are ASCII, so a URL
	// field ending with it was cut.
	LogEllipsis = "…"
	// minLogURLLength is the least URL bound (room for a scheme, a host
	// and the ellipsis).
	minLogURLLength = 32
)

// Keys of the optional keyed fields, in the order they are written.
const (
	logKeyRobots    = "robots="
	logKeyCanonical = "canonical="
	logKeyVia       = "via="
	logKeyHops      = "hops="
	logKeyDigest    = "digest="
	logKeyProto     = "proto="
	logKeyWARC      = "warc="
)

// logKeyedFields is how many keyed fields a line may have.
const logKeyedFields = 7

// maxLogLine is the longest line a LogReader parses: the widest line Write
// makes (the bounds above plus under 200 bytes of numbers and spaces) fits
// with room to spare, so a longer line is corrupt, not a long entry.
const maxLogLine = 1 << 20

// defaultLogURLLength is the URL field's bound when SetMaxURLLength was not
// called: the crawl's default URL limit, taken from extract so that the
// default lives in one place.
func defaultLogURLLength() int {
	var o extract.FilterOptions
	o.EnsureDefaults()
	return o.MaxURLLength
}

// SetMaxURLLength sets the URL field's bound to the crawl's longest URL
// (extract.FilterOptions.MaxURLLength: 0 for its default, -1 for none,
// which logs URLs up to MaxLogURLLength). A Node calls it with its
// Filter's bound when the Filter reports one (NewSeedFilter's does).
func (l *CrawlLog) SetMaxURLLength(n int) {
	if l == nil {
		return
	}
	switch {
	case n == 0:
		n = defaultLogURLLength()
	case n < 0 || n > MaxLogURLLength:
		n = MaxLogURLLength
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maxURL = max(n, minLogURLLength)
}

// fitFilter bounds the URL field by f's URL bound, if f reports one.
func (l *CrawlLog) fitFilter(f LinkFilter) {
	if b, ok := f.(interface{ MaxURLLength() int }); ok {
		l.SetMaxURLLength(b.MaxURLLength())
	}
}

// SetEpochSource makes Write record epoch() as the EPOCH field of entries
// whose Epoch is 0 (a cluster member passes its current view's epoch).
func (l *CrawlLog) SetEpochSource(epoch func() uint64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.epoch = epoch
}

// OpenCrawlLog opens (appending) the crawl log at path, cutting a torn
// last line first (see openLogAppend) with a warning to logger (nil:
// discard).
func OpenCrawlLog(path string, logger *slog.Logger) (*CrawlLog, error) {
	f, err := openLogAppend(path, logger)
	if err != nil {
		return nil, err
	}
	return &CrawlLog{w: f, f: f}, nil
}

// openLogAppend opens the log at path for appending after cutting a last
// line that has no '\n' (a kill mid-write): appended to, the fragment would
// glue onto the next line and leave a malformed line in the middle of the
// log for good (issue #23, defect 2). The cut is logged to logger.
func openLogAppend(path string, logger *slog.Logger) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("crawl: open crawl log: %w", err)
	}
	cut, err := cutTornTail(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("crawl: repair crawl log %s: %w", path, err)
	}
	if cut > 0 {
		logging.OrDiscard(logger).Warn("crawl: cut the torn last line of the crawl log", "path", path, "bytes", cut)
	}
	return f, nil
}

// cutTornTail truncates f after its last '\n' (to empty if it has none)
// and returns how many bytes it cut.
func cutTornTail(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size, end := fi.Size(), fi.Size()
	buf := make([]byte, 0, 64<<10)
	for end > 0 {
		n := min(int64(cap(buf)), end)
		buf = buf[:n]
		if _, err := f.ReadAt(buf, end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			end += int64(i) + 1 - n
			break
		}
		end -= n
	}
	if end == size {
		return 0, nil
	}
	return size - end, f.Truncate(end)
}

// NewCrawlLog writes the crawl log to w (which must be safe to call from one
// goroutine at a time; CrawlLog serialises calls).
func NewCrawlLog(w io.Writer) *CrawlLog { return &CrawlLog{w: w} }

// appendField appends s as one field of at most limit bytes: "-" if s is
// empty; a space becomes '_' (as the log always wrote it:
// text/html;_charset=utf-8) and every other control byte (C0, DEL) %XX, so
// that no byte of s splits the field or the line (bufio would also eat a
// CR before a '\n'). A longer field is cut at a character boundary and
// ends with LogEllipsis.
func appendField(b []byte, s string, limit int) []byte {
	if s == "" {
		return append(b, '-')
	}
	const hex = "0123456789ABCDEF"
	start, cut := len(b), len(b)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if utf8.RuneStart(c) && len(b)-start <= limit-len(LogEllipsis) {
			cut = len(b)
		}
		switch {
		case c == ' ':
			b = append(b, '_')
		case c < 0x20 || c == 0x7f:
			b = append(b, '%', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
		if len(b)-start > limit {
			return append(b[:cut], LogEllipsis...)
		}
	}
	return b
}

// Write appends one entry.
func (l *CrawlLog) Write(e LogEntry) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buf[:0]
	b = e.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	b = append(b, ' ')
	if l.maxURL == 0 {
		l.maxURL = defaultLogURLLength()
	}
	b = appendField(b, e.Node, LogShortLength)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.Bytes, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.Duration.Milliseconds(), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(e.Links), 10)
	b = append(b, ' ')
	b = appendField(b, e.Outcome, LogShortLength)
	b = append(b, ' ')
	b = appendField(b, e.URL, l.maxURL)
	b = append(b, ' ')
	b = appendField(b, e.ContentType, LogContentTypeLength)
	b = append(b, ' ')
	b = appendField(b, e.Note, l.maxURL+LogNoteSlack)
	if e.Epoch == 0 && l.epoch != nil {
		e.Epoch = l.epoch()
	}
	if e.Epoch != 0 {
		b = append(b, ' ')
		b = strconv.AppendUint(b, e.Epoch, 10)
	}
	if e.Robots != "" {
		b = append(b, " "+logKeyRobots...)
		b = appendField(b, e.Robots, LogShortLength)
	}
	if e.Canonical != "" {
		b = append(b, " "+logKeyCanonical...)
		b = appendField(b, e.Canonical, l.maxURL)
	}
	b = l.appendProvenance(b, &e)
	b = append(b, '\n')
	l.buf = b
	_, err := l.w.Write(b)
	return err
}

// Close closes the underlying file, if CrawlLog opened it.
func (l *CrawlLog) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	return l.f.Close()
}

// appendProvenance appends the keyed fields that say where a line's URL
// came from and where its body went: via=, hops=, digest=, proto=, warc=.
func (l *CrawlLog) appendProvenance(b []byte, e *LogEntry) []byte {
	for _, f := range [...]struct {
		key, v string
		limit  int
	}{
		{logKeyVia, e.Via, l.maxURL},
		{logKeyHops, e.Hops, LogShortLength},
		{logKeyDigest, e.Digest, LogShortLength},
		{logKeyProto, e.Proto, LogShortLength},
	} {
		if f.v != "" {
			b = append(b, ' ')
			b = append(b, f.key...)
			b = appendField(b, f.v, f.limit)
		}
	}
	if e.WARCFile != "" {
		b = append(b, " "+logKeyWARC...)
		b = appendField(b, e.WARCFile, LogContentTypeLength)
		b = append(b, ':')
		b = strconv.AppendInt(b, e.WARCOffset, 10)
	}
	return b
}
