package warc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
)

// file is the WARC file being written and its index.
type file struct {
	name string // final path
	f    *os.File
	bw   *bufio.Writer
	n    int64 // bytes written
	cdx  *os.File
	cbw  *bufio.Writer
	// infoID is the WARC-Record-ID of the file's warcinfo record, which
	// every other record of the file names in WARC-Warcinfo-ID.
	infoID string
}

// fileStamp is Heritrix's 17-digit timestamp (milliseconds).
func fileStamp(t time.Time) string {
	t = t.UTC()
	return t.Format("20060102150405") + fmt.Sprintf("%03d", t.Nanosecond()/1e6)
}

func (w *Writer) openFile() error {
	w.serial++
	now := w.o.Now().UTC()
	name := filepath.Join(w.o.Dir, fmt.Sprintf("%s-%s-%s-%05d.warc.gz", w.o.Prefix, w.o.NodeID, fileStamp(now), w.serial))
	f, err := os.OpenFile(name+openSuffix, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("warc: %w", err)
	}
	c := &file{name: name, f: f, bw: bufio.NewWriterSize(f, 1<<16)}
	if !w.o.NoCDXJ {
		if c.cdx, err = os.OpenFile(cdxjName(name)+openSuffix, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644); err != nil {
			f.Close()
			return fmt.Errorf("warc: %w", err)
		}
		c.cbw = bufio.NewWriterSize(c.cdx, 1<<14)
	}
	c.infoID = *w.infoID.Load()
	info := w.warcinfo(filepath.Base(name), now, c.infoID)
	if _, err := c.bw.Write(info); err != nil {
		return fmt.Errorf("warc: writing %s: %w", name, err)
	}
	c.n = int64(len(info))
	w.cur = c
	w.mu.Lock()
	w.stats.Files++
	w.stats.Records++
	w.stats.Bytes += c.n
	w.mu.Unlock()
	return nil
}

// openSuffix marks a file being written; a crash leaves it behind.
const openSuffix = ".open"

// cdxjName is the index file beside the WARC file name.
func cdxjName(warcName string) string {
	return strings.TrimSuffix(strings.TrimSuffix(warcName, ".gz"), ".warc") + ".cdxj"
}

// closeFile flushes and renames the current file, then sorts its index
// into place.
func (w *Writer) closeFile() error {
	c := w.cur
	if c == nil {
		return nil
	}
	w.cur = nil
	w.nextInfoID() // records compressed from now on name the next file's warcinfo
	err := c.bw.Flush()
	if err2 := c.f.Close(); err == nil {
		err = err2
	}
	if err == nil {
		err = os.Rename(c.name+openSuffix, c.name)
	}
	if c.cdx != nil {
		err2 := c.cbw.Flush()
		if err3 := c.cdx.Close(); err2 == nil {
			err2 = err3
		}
		if err2 == nil && err == nil {
			err2 = sortIndexFile(cdxjName(c.name)+openSuffix, cdxjName(c.name))
		}
		if err == nil {
			err = err2
		}
	}
	w.mu.Lock()
	w.files = append(w.files, c.name)
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("warc: closing %s: %w", c.name, err)
	}
	return nil
}

// warcinfo is the compressed warcinfo record opening a file.
func (w *Writer) warcinfo(name string, now time.Time, id string) []byte {
	var info strings.Builder
	fmt.Fprintf(&info, "software: %s\r\nformat: WARC File Format 1.1\r\nconformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n", w.o.Software)
	for _, f := range infoFields(w.o.Info) {
		fmt.Fprintf(&info, "%s: %s\r\n", f.Name, f.Value)
	}
	p := &pending{
		typ: "warcinfo", id: id,
		fields: []Field{
			{"WARC-Date", now.Format(time.RFC3339Nano)},
			{"WARC-Filename", name},
			{"Content-Type", "application/warc-fields"},
		},
		head: []byte(info.String()),
	}
	p.digest()
	var buf bufferWriter
	if err := compress(&buf, p, w.level); err != nil {
		panic(err) // writes to memory cannot fail
	}
	return buf.b
}

// io.Writer over a growing slice (bytes.Buffer without the read side).
type bufferWriter struct{ b []byte }

func (b *bufferWriter) Write(p []byte) (int, error) {
	b.b = append(b.b, p...)
	return len(p), nil
}

var _ io.Writer = (*bufferWriter)(nil)

// nextInfoID draws the warcinfo record ID of the next file.
func (w *Writer) nextInfoID() {
	id := "<" + w.o.NewID() + ">"
	w.infoID.Store(&id)
}

// reinfo returns gz (one record compressed as one gzip member, whose
// header names the warcinfo record from) with that WARC-Warcinfo-ID
// changed to to. Records are compressed by callers before the writer
// goroutine chooses their file, so the few compressed just before a
// rotation name the closed file's warcinfo: the writer rewrites them.
func reinfo(gz []byte, from, to string, level int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("warc: reinfo: %w", err)
	}
	rec, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("warc: reinfo: %w", err)
	}
	end := bytes.Index(rec, []byte("\r\n\r\n"))
	old := []byte("\r\nWARC-Warcinfo-ID: " + from + "\r\n")
	i := bytes.Index(rec[:max(end+2, 0)], old)
	if end < 0 || i < 0 {
		return nil, fmt.Errorf("warc: reinfo: no WARC-Warcinfo-ID %s in the record", from)
	}
	out := bufferWriter{b: getBuf()}
	z := gzWriter(&out, level)
	defer putGz(z, level)
	for _, b := range [][]byte{rec[:i], []byte("\r\nWARC-Warcinfo-ID: " + to + "\r\n"), rec[i+len(old):]} {
		if _, err := z.Write(b); err != nil {
			return nil, err
		}
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return out.b, nil
}
