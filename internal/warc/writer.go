package warc

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Writer writes WARC files. Safe for concurrent use; must be Closed.
//
// Callers build and compress their records in their own goroutine
// (WriteFetch, WriteRecord); one writer goroutine appends them to the file,
// flushes once per batch of queued calls (a record is in the OS before its
// call returns, so it survives kill -9) and rotates files.
type Writer struct {
	o     Options
	level int // of o.Compression
	jobs  chan *job
	done  chan struct{} // closed when run returns
	seen  *digestMemory
	dlog  *digestLog // the digests of seen, on disk; owned by run
	// infoID is the warcinfo record ID of the file the next records go to
	// (the current one, or the next to open): callers put it in the
	// records they compress; the writer goroutine renews it at rotation.
	infoID  atomic.Pointer[string]
	reinfos atomic.Int64 // records rewritten for the next file (tests)

	sendMu sync.RWMutex // held for reading while sending on jobs
	closed bool         // under sendMu

	mu    sync.Mutex // guards stats and files
	stats Stats
	files []string

	// Owned by the run goroutine.
	cur    *file
	serial int
	err    error  // sticky write error: the file is no longer well-formed
	cdxBuf []byte // the CDXJ line being written
}

// NewWriter returns a Writer for o (defaults applied to a copy). Files of
// this Prefix and NodeID left open by a crash are repaired first (cut
// after their last complete record, closed and indexed). The first file is
// created on the first write.
func NewWriter(o Options) (*Writer, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: Dir %q is not a directory", ErrBadOptions, o.Dir)
	}
	level, _ := ParseCompression(o.Compression) // validated
	w := &Writer{o: o, level: level, jobs: make(chan *job, o.Queue), done: make(chan struct{})}
	if o.RevisitMemory > 0 {
		w.seen = newDigestMemory(o.RevisitMemory)
	}
	w.nextInfoID()
	if err := w.repair(); err != nil {
		return nil, err
	}
	if w.seen != nil {
		if err := w.loadDigests(); err != nil {
			return nil, err
		}
	}
	go w.run()
	return w, nil
}

// Location says where a fetch's response (or revisit) record was written.
type Location struct {
	File          string // base name of the WARC file
	Offset        int64  // of the record's gzip member in File
	Length        int64  // compressed length of that member
	RecordID      string // WARC-Record-ID, with angle brackets
	PayloadDigest string // "sha1:" + base32
	Revisit       bool   // written as a revisit of an earlier record
}

// job is one call's records, compressed, on their way to the file.
type job struct {
	members []member
	locs    []Location // filled by run: one per member
	// remember is the payload a response record archives, remembered by
	// run once the record is in the file.
	remember *remembered
	err      error
	done     chan struct{}
}

// member is one record compressed as its own gzip member.
type member struct {
	gz    []byte
	id    string
	info  string    // the WARC-Warcinfo-ID it was compressed with ("": none)
	level int       // the gzip level it was compressed at
	cdx   *cdxEntry // non-nil for response and revisit records
}

// submit hands j to the writer goroutine and waits until it is written.
func (w *Writer) submit(j *job) error {
	if err := w.enqueue(j); err != nil {
		return err
	}
	<-j.done
	return j.err
}

// enqueue hands j to the writer goroutine (waiting while the queue is
// full); j.done is closed once j is written.
func (w *Writer) enqueue(j *job) error {
	j.done = make(chan struct{})
	w.sendMu.RLock()
	defer w.sendMu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	w.jobs <- j
	return nil
}

// run owns the files: it writes queued jobs in batches and flushes after
// each batch, so that a busy queue costs one flush for many fetches.
func (w *Writer) run() {
	defer close(w.done)
	var batch []*job
	for j := range w.jobs {
		batch = append(batch[:0], j)
	drain:
		for len(batch) < 256 {
			select {
			case j, ok := <-w.jobs:
				if !ok {
					break drain
				}
				batch = append(batch, j)
			default:
				break drain
			}
		}
		for _, j := range batch {
			j.err = w.write(j)
		}
		if err := w.flush(); err != nil {
			for _, j := range batch {
				if j.err == nil {
					j.err = err
				}
			}
		}
		w.remember(batch)
		for _, j := range batch {
			close(j.done)
		}
	}
	if err := w.closeFile(); err != nil && w.err == nil {
		w.err = err // Close reports it
	}
	if w.dlog != nil {
		w.dlog.close()
	}
}

// Close writes what is queued, closes the current file (its index sorted
// beside it) and stops the writer goroutine. Later writes fail with
// ErrClosed; Close is idempotent.
func (w *Writer) Close() error {
	w.sendMu.Lock()
	if !w.closed {
		w.closed = true
		close(w.jobs)
	}
	w.sendMu.Unlock()
	<-w.done
	return w.err
}

// Files returns the names of the files closed so far.
func (w *Writer) Files() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.files...)
}

// Stats returns the counters.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// write appends j's members to the current file, opening one if needed,
// and rotates it after once it reaches MaxSize (a fetch's records stay in
// one file).
func (w *Writer) write(j *job) error {
	if w.err != nil {
		return w.err
	}
	if w.cur == nil {
		if err := w.openFile(); err != nil {
			return w.fail(err)
		}
	}
	c := w.cur
	j.locs = make([]Location, len(j.members))
	for i, m := range j.members {
		if m.info != "" && m.info != c.infoID {
			gz, err := reinfo(m.gz, m.info, c.infoID, m.level)
			if err != nil {
				return err // this job only: nothing of it is written yet
			}
			putBuf(m.gz)
			j.members[i].gz = gz
			w.reinfos.Add(1)
		}
	}
	for i, m := range j.members {
		off := c.n
		if _, err := c.bw.Write(m.gz); err != nil {
			return w.fail(fmt.Errorf("warc: writing %s: %w", c.name, err))
		}
		c.n += int64(len(m.gz))
		j.locs[i] = Location{File: filepath.Base(c.name), Offset: off, Length: int64(len(m.gz)), RecordID: m.id}
		if m.cdx != nil && c.cbw != nil {
			m.cdx.offset, m.cdx.length, m.cdx.filename = off, int64(len(m.gz)), filepath.Base(c.name)
			w.cdxBuf = m.cdx.appendLine(w.cdxBuf[:0])
			if _, err := c.cbw.Write(w.cdxBuf); err != nil {
				return w.fail(fmt.Errorf("warc: writing index of %s: %w", c.name, err))
			}
		}
	}
	w.mu.Lock()
	w.stats.Records += int64(len(j.members))
	w.stats.Bytes += c.n - j.locs[0].Offset
	w.mu.Unlock()
	if c.n >= w.o.MaxSize {
		if err := w.closeFile(); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// fail makes err sticky: after a failed write the file's tail is unknown.
func (w *Writer) fail(err error) error {
	w.err = err
	return err
}

func (w *Writer) flush() error {
	if w.cur == nil {
		return w.err
	}
	if err := w.cur.bw.Flush(); err != nil {
		return w.fail(fmt.Errorf("warc: writing %s: %w", w.cur.name, err))
	}
	// The index is not flushed: a crash leaves NAME.cdxj.open, which
	// repair rebuilds from the records (scan.go), so flushing it per batch
	// bought no safety for a write(2) per batch; closeFile flushes it.
	return nil
}
