package crawl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
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
}

// CrawlLog appends one line per fetch to a file, Heritrix-style:
//
//	TIME NODE STATUS BYTES DURATION_MS LINKS OUTCOME URL CONTENT-TYPE NOTE [EPOCH]
//
// EPOCH, the membership epoch (LogEntry.Epoch), is written by cluster
// members only (SetEpochSource); lines without it parse with Epoch 0.
//
// Each line is written with one write(2) on an O_APPEND file so that a
// kill -9 loses at most the line being written. CrawlLog is safe for
// concurrent use and must be Closed.
type CrawlLog struct {
	mu    sync.Mutex
	w     io.Writer
	f     *os.File
	buf   []byte
	epoch func() uint64 // fills in LogEntry.Epoch when it is 0
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

// OpenCrawlLog opens (appending) the crawl log at path. A torn last line
// (a kill -9 or a full disk mid-write) is cut off first: appended to, it
// would become a malformed line in the middle of the log. Its fetch never
// completed (the line is written before the URL is marked done), so the
// URL is fetched and logged again.
func OpenCrawlLog(path string) (*CrawlLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("crawl: open crawl log: %w", err)
	}
	if err := cutTornLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("crawl: open crawl log: %w", err)
	}
	return &CrawlLog{w: f, f: f}, nil
}

// cutTornLine truncates f after its last newline.
func cutTornLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	buf := make([]byte, 64<<10)
	for off := end; off > 0; {
		n := min(off, int64(len(buf)))
		off -= n
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = off + int64(i) + 1
			break
		}
		end = off // no newline yet: everything from off on is torn
	}
	if end == st.Size() {
		return nil
	}
	return f.Truncate(end)
}

// NewCrawlLog writes the crawl log to w (which must be safe to call from one
// goroutine at a time; CrawlLog serialises calls).
func NewCrawlLog(w io.Writer) *CrawlLog { return &CrawlLog{w: w} }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return '_'
		}
		return r
	}, s)
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
	b = append(b, dash(e.Node)...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.Bytes, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.Duration.Milliseconds(), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(e.Links), 10)
	b = append(b, ' ')
	b = append(b, dash(e.Outcome)...)
	b = append(b, ' ')
	b = append(b, dash(e.URL)...)
	b = append(b, ' ')
	b = append(b, dash(e.ContentType)...)
	b = append(b, ' ')
	b = append(b, dash(e.Note)...)
	if e.Epoch == 0 && l.epoch != nil {
		e.Epoch = l.epoch()
	}
	if e.Epoch != 0 {
		b = append(b, ' ')
		b = strconv.AppendUint(b, e.Epoch, 10)
	}
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

// ErrBadLogLine reports a crawl log line that does not parse.
var ErrBadLogLine = errors.New("crawl: malformed crawl log line")

// ParseLogLine parses one line written by CrawlLog.Write. A torn last line
// (from a kill mid-write) fails to parse; callers reading logs after a crash
// should skip such a line.
func ParseLogLine(line string) (LogEntry, error) {
	f := strings.Split(strings.TrimRight(line, "\n"), " ")
	if len(f) != 10 && len(f) != 11 {
		return LogEntry{}, fmt.Errorf("%w: %d fields in %q", ErrBadLogLine, len(f), line)
	}
	var e LogEntry
	var err error
	if e.Time, err = time.Parse("2006-01-02T15:04:05.000Z", f[0]); err != nil {
		return e, fmt.Errorf("%w: %v", ErrBadLogLine, err)
	}
	undash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	e.Node = undash(f[1])
	st, err1 := strconv.Atoi(f[2])
	by, err2 := strconv.ParseInt(f[3], 10, 64)
	ms, err3 := strconv.ParseInt(f[4], 10, 64)
	ln, err4 := strconv.Atoi(f[5])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return e, fmt.Errorf("%w: %v", ErrBadLogLine, err)
	}
	e.Status, e.Bytes, e.Duration, e.Links = st, by, time.Duration(ms)*time.Millisecond, ln
	e.Outcome, e.URL, e.ContentType, e.Note = undash(f[6]), undash(f[7]), undash(f[8]), undash(f[9])
	if len(f) == 11 {
		if e.Epoch, err = strconv.ParseUint(f[10], 10, 64); err != nil || e.Epoch == 0 {
			return e, fmt.Errorf("%w: epoch %q", ErrBadLogLine, f[10])
		}
	}
	return e, nil
}

// ReadLogFile returns the entries of a crawl log, skipping a torn final line.
func ReadLogFile(path string) ([]LogEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []LogEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var pendingErr error
	for sc.Scan() {
		if pendingErr != nil {
			return out, pendingErr // a bad line that was not the last one
		}
		e, err := ParseLogLine(sc.Text())
		if err != nil {
			pendingErr = err
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
