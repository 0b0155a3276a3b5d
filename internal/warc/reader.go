package warc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrMalformed is returned for input that is not a WARC record.
var ErrMalformed = errors.New("warc: malformed record")

// MaxHeaderBytes bounds a record's header; MaxBlockBytes bounds the block a
// Reader holds in memory.
const (
	MaxHeaderBytes = 1 << 20
	MaxBlockBytes  = 1 << 30
)

// ReadRecord is one record read back.
type ReadRecord struct {
	Version string  // "WARC/1.1"
	Header  []Field // in file order
	Block   []byte
}

// Get returns the first value of the named field (case-insensitive).
func (r *ReadRecord) Get(name string) string {
	for _, f := range r.Header {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// Reader reads records from a plain or gzip (multi-member) WARC stream.
// Not safe for concurrent use.
type Reader struct {
	br       *bufio.Reader
	maxBlock int64
}

// NewReader returns a Reader of r; gzip input is detected by its magic.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReader(r)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		br = bufio.NewReader(zr)
	}
	return &Reader{br: br, maxBlock: MaxBlockBytes}, nil
}

// Next returns the next record, or io.EOF after the last.
func (r *Reader) Next() (*ReadRecord, error) {
	// Skip blank lines between records.
	var line string
	var err error
	for {
		line, err = r.line()
		if err != nil {
			if err == io.EOF && line == "" {
				return nil, io.EOF
			}
			if err == io.EOF {
				return nil, fmt.Errorf("%w: truncated version line", ErrMalformed)
			}
			return nil, err
		}
		if line != "" {
			break
		}
	}
	if !strings.HasPrefix(line, "WARC/") {
		return nil, fmt.Errorf("%w: version line %.40q", ErrMalformed, line)
	}
	rec := &ReadRecord{Version: line}
	total := len(line)
	for {
		l, err := r.line()
		if err != nil {
			return nil, fmt.Errorf("%w: truncated header: %v", ErrMalformed, err)
		}
		if l == "" {
			break
		}
		total += len(l)
		if total > MaxHeaderBytes {
			return nil, fmt.Errorf("%w: header over %d bytes", ErrMalformed, MaxHeaderBytes)
		}
		// A bare CR is no line end here but is one to other readers, and
		// the Writer cannot write it back (checkField).
		bareCR := func(v string) error {
			if strings.IndexByte(v, '\r') >= 0 {
				return fmt.Errorf("%w: carriage return in header line %.40q", ErrMalformed, l)
			}
			return nil
		}
		if (l[0] == ' ' || l[0] == '\t') && len(rec.Header) > 0 { // continuation
			if err := bareCR(l); err != nil {
				return nil, err
			}
			// Joined with one space, so that the value is what the
			// Writer writes on one line and reads back.
			if c, f := strings.TrimSpace(l), &rec.Header[len(rec.Header)-1]; c != "" && f.Value != "" {
				f.Value += " " + c
			} else if c != "" {
				f.Value = c
			}
			continue
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("%w: header line %.40q", ErrMalformed, l)
		}
		switch name = strings.TrimSpace(name); {
		case name == "":
			return nil, fmt.Errorf("%w: empty field name in header line %.40q", ErrMalformed, l)
		case !isToken(name):
			return nil, fmt.Errorf("%w: field name %.40q is not a token", ErrMalformed, name)
		}
		if err := bareCR(value); err != nil {
			return nil, err
		}
		rec.Header = append(rec.Header, Field{name, strings.TrimSpace(value)})
	}
	cl := rec.Get("Content-Length")
	n, err := strconv.ParseInt(cl, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: Content-Length %q", ErrMalformed, cl)
	}
	if n > r.maxBlock {
		return nil, fmt.Errorf("%w: block of %d bytes", ErrMalformed, n)
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r.br, n); err != nil {
		return nil, fmt.Errorf("%w: truncated block: %v", ErrMalformed, err)
	}
	rec.Block = buf.Bytes()
	return rec, nil
}

// line reads one line without its CRLF (or LF).
func (r *Reader) line() (string, error) {
	var b []byte
	for {
		frag, isPrefix, err := r.br.ReadLine()
		b = append(b, frag...)
		if len(b) > MaxHeaderBytes {
			return "", fmt.Errorf("%w: line over %d bytes", ErrMalformed, MaxHeaderBytes)
		}
		if err != nil {
			return string(b), err
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}
