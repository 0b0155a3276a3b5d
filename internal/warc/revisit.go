package warc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// digestEntry is what a revisit record needs of the record it refers to.
type digestEntry struct{ id, uri, date string }

// digestMemory remembers the last n payload digests written (FIFO). Safe
// for concurrent use.
type digestMemory struct {
	mu   sync.Mutex
	m    map[string]digestEntry
	ring []string
	next int
}

func newDigestMemory(n int) *digestMemory {
	return &digestMemory{m: make(map[string]digestEntry, min(n, 1<<16)), ring: make([]string, n)}
}

func (d *digestMemory) get(k string) (digestEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.m[k]
	return e, ok
}

func (d *digestMemory) put(k string, e digestEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.m[k]; ok {
		return
	}
	if old := d.ring[d.next]; old != "" {
		delete(d.m, old)
	}
	d.ring[d.next] = k
	d.next = (d.next + 1) % len(d.ring)
	d.m[k] = e
}

// remembered is a payload digest and the record that archived it.
type remembered struct {
	digest string
	e      digestEntry
}

// entries are the remembered digests, oldest first.
func (d *digestMemory) entries() []remembered {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]remembered, 0, len(d.m))
	for i := range d.ring {
		k := d.ring[(d.next+i)%len(d.ring)]
		if k != "" {
			out = append(out, remembered{k, d.m[k]})
		}
	}
	return out
}

// Revisit memory across restarts: the digests the memory holds are
// appended to PREFIX-NODEID.digests in Dir (one line each: digest, record
// ID, date, URI), after their records are in the file, and read back at
// NewWriter, so that a resumed crawl writes revisit records for payloads
// archived before it stopped. The file is rewritten from the memory when
// it holds more than twice RevisitMemory lines (or a torn last line), so
// it stays bounded. Losing it (or a line) costs only a full response
// record instead of a revisit.

// digestsSuffix ends the digest file's name (PREFIX-NODEID.digests: no
// '-' after NODEID, so that repair never takes it for a WARC file).
const digestsSuffix = ".digests"

// digestLog is the open digest file.
type digestLog struct {
	path  string
	f     *os.File
	bw    *bufio.Writer
	lines int // in the file
	max   int // rewrite beyond this many
}

func (w *Writer) digestsPath() string {
	return filepath.Join(w.o.Dir, w.o.Prefix+"-"+w.o.NodeID+digestsSuffix)
}

// loadDigests fills w.seen from the digest file and opens it for
// appending.
func (w *Writer) loadDigests() error {
	l := &digestLog{path: w.digestsPath(), max: 2 * w.o.RevisitMemory}
	data, err := os.ReadFile(l.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("warc: %w", err)
	}
	torn := false
	for len(data) > 0 {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		data = rest
		if !ok {
			torn = true // the line being written at a crash
			break
		}
		f := strings.SplitN(string(line), " ", 4)
		if len(f) != 4 || f[0] == "" || !strings.HasPrefix(f[1], "<") {
			torn = true // not ours: rewrite the file without it
			continue
		}
		w.seen.put(f[0], digestEntry{id: f[1], date: f[2], uri: f[3]})
		l.lines++
	}
	if torn || l.lines > l.max {
		if err := l.rewrite(w.seen.entries()); err != nil {
			return err
		}
	} else if err := l.open(); err != nil {
		return err
	}
	w.dlog = l
	return nil
}

func (l *digestLog) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("warc: %w", err)
	}
	l.f, l.bw = f, bufio.NewWriterSize(f, 1<<14)
	return nil
}

// rewrite replaces the file with es (through a temporary file and a
// rename: a crash leaves the old file or the new one) and opens it.
func (l *digestLog) rewrite(es []remembered) error {
	l.close()
	tmp := l.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("warc: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	for _, r := range es {
		writeDigestLine(bw, r)
	}
	err = bw.Flush()
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		return fmt.Errorf("warc: rewriting %s: %w", l.path, err)
	}
	l.lines = len(es)
	return l.open()
}

// writeDigestLine writes r's line to bw, and returns bw's error (sticky:
// that of any earlier write too).
func writeDigestLine(bw *bufio.Writer, r remembered) error {
	var err error
	for _, s := range []string{r.digest, " ", r.e.id, " ", r.e.date, " ", r.e.uri, "\n"} {
		_, err = bw.WriteString(s)
	}
	return err
}

func (l *digestLog) close() {
	if l.f != nil {
		l.bw.Flush()
		l.f.Close()
		l.f = nil
	}
}

// remember puts the payloads archived by batch's written jobs in the
// memory and the digest file. A digest file that fails is dropped with a
// warning: it only saves archive space.
func (w *Writer) remember(batch []*job) {
	n := 0
	var err error
	for _, j := range batch {
		if j.remember == nil || j.err != nil {
			continue
		}
		w.seen.put(j.remember.digest, j.remember.e)
		if w.dlog != nil && err == nil {
			err = writeDigestLine(w.dlog.bw, *j.remember)
			n++
		}
	}
	if w.dlog == nil || n == 0 {
		return
	}
	w.dlog.lines += n
	// Not flushed per batch (a write(2) each): a kill -9 loses at most the
	// buffer's last lines, whose payloads are then archived again in full
	// if seen again, and a torn last line is dropped at load.
	if err == nil && w.dlog.lines > w.dlog.max {
		err = w.dlog.rewrite(w.seen.entries())
	}
	if err != nil {
		w.o.Logger.Warn("warc: digest file dropped; revisits are not remembered across a restart", "file", w.dlog.path, "err", err)
		w.dlog.close()
		w.dlog = nil
	}
}
