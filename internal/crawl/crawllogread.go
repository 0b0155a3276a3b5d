package crawl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrBadLogLine reports a crawl log line that does not parse.
var ErrBadLogLine = errors.New("crawl: malformed crawl log line")

// ParseLogLine parses one line written by CrawlLog.Write. Text fields come
// back as written (escaped and capped; "-" is empty), so parsing what Write
// wrote gives back the entry with those fields escaped and capped.
// A torn line (from a kill mid-write) fails to parse.
func ParseLogLine(line string) (LogEntry, error) {
	f := strings.Split(strings.TrimRight(line, "\n"), " ")
	if len(f) < 10 || len(f) > 11+logKeyedFields {
		return LogEntry{}, fmt.Errorf("%w: %d fields in %.200q", ErrBadLogLine, len(f), line)
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
	rest := f[10:]
	if len(rest) > 0 && !strings.Contains(rest[0], "=") {
		if e.Epoch, err = strconv.ParseUint(rest[0], 10, 64); err != nil || e.Epoch == 0 {
			return e, fmt.Errorf("%w: epoch %q", ErrBadLogLine, rest[0])
		}
		rest = rest[1:]
	}
	var warcLoc string
	for _, k := range [...]struct {
		key string
		v   *string
	}{{logKeyRobots, &e.Robots}, {logKeyCanonical, &e.Canonical}, {logKeyVia, &e.Via},
		{logKeyHops, &e.Hops}, {logKeyDigest, &e.Digest}, {logKeyProto, &e.Proto}, {logKeyWARC, &warcLoc}} {
		if len(rest) > 0 && strings.HasPrefix(rest[0], k.key) {
			if *k.v = rest[0][len(k.key):]; *k.v == "" {
				return e, fmt.Errorf("%w: empty %s", ErrBadLogLine, k.key)
			}
			rest = rest[1:]
		}
	}
	if warcLoc != "" {
		i := strings.LastIndexByte(warcLoc, ':')
		if i <= 0 {
			return e, fmt.Errorf("%w: warc %.200q", ErrBadLogLine, warcLoc)
		}
		off := warcLoc[i+1:]
		if e.WARCOffset, err = strconv.ParseInt(off, 10, 64); err != nil || off[0] == '+' || off[0] == '-' ||
			(len(off) > 1 && off[0] == '0') {
			return e, fmt.Errorf("%w: warc offset %.200q", ErrBadLogLine, warcLoc)
		}
		e.WARCFile = warcLoc[:i]
	}
	if len(rest) > 0 {
		return e, fmt.Errorf("%w: unexpected field %.200q", ErrBadLogLine, rest[0])
	}
	return e, nil
}

// LogReadStats counts what a LogReader skipped.
type LogReadStats struct {
	Entries int // lines parsed
	// Malformed counts whole lines skipped: they do not parse, or are
	// longer than any line Write makes (maxLogLine).
	Malformed int
	// TornTail: the input ended with a line without '\n' (a kill
	// mid-write, or a log being written); it is skipped and not counted.
	TornTail bool
}

// LogReader reads the entries of a crawl log, skipping (and counting) the
// lines that do not parse wherever they are: a log written before torn
// tails were cut on resume may hold one in the middle, and a reader that
// stopped there would wedge whoever needs the log (a hand-off). Not safe
// for concurrent use.
type LogReader struct {
	br   *bufio.Reader
	buf  []byte
	st   LogReadStats
	err  error
	done bool
}

// NewLogReader reads a crawl log from r.
func NewLogReader(r io.Reader) *LogReader {
	return &LogReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next entry, or false at the end of the input or on a
// read error (see Err).
func (r *LogReader) Next() (LogEntry, bool) {
	for !r.done {
		line, long, err := r.line()
		if err != nil {
			r.done = true
			if err != io.EOF {
				r.err = err
			} else if len(line) > 0 || long {
				r.st.TornTail = true
			}
			break
		}
		if long {
			r.st.Malformed++
			continue
		}
		e, perr := ParseLogLine(string(line))
		if perr != nil {
			r.st.Malformed++
			continue
		}
		r.st.Entries++
		return e, true
	}
	return LogEntry{}, false
}

// line returns the next line without its '\n' (long: it had more than
// maxLogLine bytes, which are dropped), or the unterminated rest and the
// error that ended it (io.EOF at the end).
func (r *LogReader) line() (line []byte, long bool, err error) {
	r.buf = r.buf[:0]
	for {
		frag, err := r.br.ReadSlice('\n')
		if !long && len(r.buf)+len(frag) > maxLogLine+1 {
			long, r.buf = true, r.buf[:0]
		}
		if !long {
			r.buf = append(r.buf, frag...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return r.buf, long, err
		case long:
			return nil, true, nil
		}
		return r.buf[:len(r.buf)-1], false, nil
	}
}

// Err is the read error that ended Next, if any (not io.EOF).
func (r *LogReader) Err() error { return r.err }

// Stats returns what the reader has read and skipped so far.
func (r *LogReader) Stats() LogReadStats { return r.st }

// ReadLog returns the entries of the crawl log at path and what was
// skipped (LogReader); the error is an I/O error, never a malformed line.
func ReadLog(path string) ([]LogEntry, LogReadStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, LogReadStats{}, err
	}
	defer f.Close()
	var out []LogEntry
	r := NewLogReader(f)
	for e, ok := r.Next(); ok; e, ok = r.Next() {
		out = append(out, e)
	}
	return out, r.Stats(), r.Err()
}

// ReadLogFile returns the entries of a crawl log, skipping a torn last
// line and malformed lines (ReadLog counts them).
func ReadLogFile(path string) ([]LogEntry, error) {
	es, _, err := ReadLog(path)
	return es, err
}
