package warc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Member is one record of a .warc.gz file and where its gzip member lies.
type Member struct {
	Offset, Length int64 // of the compressed member in the file
	Record         *ReadRecord
}

// countReader counts the bytes consumed through it. It is an
// io.ByteReader, so the gzip and flate readers take bytes from it without
// reading ahead: after a member, n is exactly the member's end.
type countReader struct {
	br *bufio.Reader
	n  int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.br.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countReader) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// ScanMembers calls fn for each gzip member of r in order; each member must
// hold exactly one WARC record (as the Writer writes them, and as
// CDX offsets need). It stops at the first member that is not such a
// record with an error wrapping ErrMalformed (a torn tail looks so) or at
// fn's first error.
func ScanMembers(r io.Reader, fn func(Member) error) error {
	cr := &countReader{br: bufio.NewReaderSize(r, 1<<16)}
	var zr *gzip.Reader
	for {
		if _, err := cr.br.Peek(1); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		off := cr.n
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(cr)
		} else {
			err = zr.Reset(cr)
		}
		if err != nil {
			return fmt.Errorf("%w: gzip member at offset %d: %v", ErrMalformed, off, err)
		}
		zr.Multistream(false)
		data, err := io.ReadAll(io.LimitReader(zr, MaxHeaderBytes+MaxBlockBytes+8))
		if err != nil {
			return fmt.Errorf("%w: gzip member at offset %d: %v", ErrMalformed, off, err)
		}
		rec, err := parseOne(data)
		if err != nil {
			return fmt.Errorf("member at offset %d: %w", off, err)
		}
		if err := fn(Member{Offset: off, Length: cr.n - off, Record: rec}); err != nil {
			return err
		}
	}
}

// parseOne parses data as one record followed by its CRLF CRLF.
func parseOne(data []byte) (*ReadRecord, error) {
	br := bufio.NewReader(bytes.NewReader(data))
	rd := &Reader{br: br, maxBlock: MaxBlockBytes}
	rec, err := rd.Next()
	if err != nil {
		return nil, err
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != "\r\n\r\n" {
		return nil, fmt.Errorf("%w: %d bytes after the block, want CRLF CRLF", ErrMalformed, len(rest))
	}
	return rec, nil
}

// ownPrefix is the start of this Writer's file names.
func (w *Writer) ownPrefix() string { return w.o.Prefix + "-" + w.o.NodeID + "-" }

// repair closes the files a crash left open: each is cut after its last
// complete record (a record is written whole or torn, never rewritten),
// renamed to its final name and indexed. It also sets the serial to
// continue after this node's files.
func (w *Writer) repair() error {
	ents, err := os.ReadDir(w.o.Dir)
	if err != nil {
		return fmt.Errorf("warc: %w", err)
	}
	pre := w.ownPrefix()
	for _, e := range ents {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, pre)
		if !ok {
			continue
		}
		base := strings.TrimSuffix(rest, openSuffix)
		if i := strings.LastIndexByte(strings.TrimSuffix(base, ".warc.gz"), '-'); i >= 0 {
			if s, err := strconv.Atoi(strings.TrimSuffix(base, ".warc.gz")[i+1:]); err == nil && s > w.serial {
				w.serial = s
			}
		}
		if strings.HasSuffix(name, ".warc.gz"+openSuffix) {
			if err := w.repairFile(filepath.Join(w.o.Dir, strings.TrimSuffix(name, openSuffix))); err != nil {
				return err
			}
		}
	}
	// A crash inside closeFile, after the WARC file's rename and before its
	// index was sorted into place, leaves NAME.cdxj.open beside a closed
	// NAME.warc.gz: index that file again from its records.
	ents, err = os.ReadDir(w.o.Dir)
	if err != nil {
		return fmt.Errorf("warc: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, pre) || !strings.HasSuffix(name, ".cdxj"+openSuffix) {
			continue
		}
		idx := filepath.Join(w.o.Dir, name)
		final := strings.TrimSuffix(strings.TrimSuffix(idx, openSuffix), ".cdxj") + ".warc.gz"
		if _, err := os.Stat(final); err == nil && !w.o.NoCDXJ {
			if _, _, err := WriteIndex(final); err != nil {
				return err
			}
			w.stats.Repaired++
		}
		if err := os.Remove(idx); err != nil {
			return fmt.Errorf("warc: repair: %w", err)
		}
	}
	return nil
}

func (w *Writer) repairFile(final string) error {
	open := final + openSuffix
	f, err := os.OpenFile(open, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("warc: repair: %w", err)
	}
	var good int64
	serr := ScanMembers(f, func(m Member) error {
		good = m.Offset + m.Length
		return nil
	})
	if serr != nil && !errors.Is(serr, ErrMalformed) {
		f.Close()
		return fmt.Errorf("warc: repair %s: %w", open, serr)
	}
	fi, err := f.Stat()
	if err == nil {
		err = f.Truncate(good)
	}
	if err == nil {
		err = f.Sync()
	}
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err != nil {
		return fmt.Errorf("warc: repair %s: %w", open, err)
	}
	cut := fi.Size() - good
	os.Remove(cdxjName(final) + openSuffix)
	w.stats.Repaired++
	w.stats.CutBytes += cut
	if good == 0 {
		w.o.Logger.Warn("warc: removed a file a crash left without a record", "file", open)
		return os.Remove(open)
	}
	if err := os.Rename(open, final); err != nil {
		return fmt.Errorf("warc: repair: %w", err)
	}
	if !w.o.NoCDXJ {
		if _, _, err := WriteIndex(final); err != nil {
			return err
		}
	}
	w.o.Logger.Warn("warc: closed a file a crash left open", "file", final, "cut_bytes", cut)
	return nil
}
