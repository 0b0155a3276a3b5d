package warc

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Errors.
var (
	ErrBadOptions = errors.New("warc: bad options")
	ErrClosed     = errors.New("warc: writer closed")
	ErrBadFetch   = errors.New("warc: bad fetch")
)

// Options configure a Writer. Zero fields take the defaults noted.
type Options struct {
	Dir    string // required: where the files go (must exist)
	Prefix string // file name prefix; default "sextant"
	// NodeID is the second part of file names (PREFIX-NODEID-TIMESTAMP-
	// SERIAL.warc.gz, as Heritrix names them); default "n0". Writers of
	// different nodes may share Dir; a Writer repairs only its own files.
	NodeID   string
	MaxSize  int64  // rotate after a file reaches this many bytes; default 1 GiB
	Software string // warcinfo "software"; default "sextant"
	// Info is added to every warcinfo record (e.g. the crawl's settings,
	// operator, isPartOf), in sorted key order.
	Info map[string]string
	// Now is the clock for WARC-Date and file names; default time.Now.
	Now func() time.Time
	// NewID returns a fresh record ID without angle brackets; default a
	// random urn:uuid.
	NewID func() string
	// Level is the gzip level; default gzip.BestSpeed (at the default
	// level, compressing cost a crawl more CPU than extracting links:
	// docs/bench/warc.md).
	Level int
	// Queue is how many fetches may wait for the writer goroutine; default
	// 64. A full queue makes WriteFetch wait (back-pressure).
	Queue int
	// RevisitMemory is how many payload digests are remembered to write
	// later identical payloads as revisit records; default 100000,
	// negative: no revisit records. Oldest digests are forgotten first.
	RevisitMemory int
	// NoCDXJ turns off the .cdxj index written beside each file.
	NoCDXJ bool
	// Logger receives the repair of torn files at open; default discard.
	Logger *slog.Logger
}

// EnsureDefaults fills zero fields.
func (o *Options) EnsureDefaults() {
	if o.Prefix == "" {
		o.Prefix = "sextant"
	}
	if o.NodeID == "" {
		o.NodeID = "n0"
	}
	if o.MaxSize == 0 {
		o.MaxSize = 1 << 30
	}
	if o.Software == "" {
		o.Software = "sextant"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = newUUID
	}
	if o.Level == 0 {
		o.Level = gzip.BestSpeed
	}
	if o.Queue == 0 {
		o.Queue = 64
	}
	if o.RevisitMemory == 0 {
		o.RevisitMemory = 100000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every bad field.
func (o *Options) Validate() error {
	var errs []string
	if o.Dir == "" {
		errs = append(errs, "Dir is empty")
	}
	for name, v := range map[string]string{"Prefix": o.Prefix, "NodeID": o.NodeID} {
		if strings.ContainsAny(v, "/\\") {
			errs = append(errs, fmt.Sprintf("%s %q contains a path separator", name, v))
		}
	}
	if o.MaxSize < 0 {
		errs = append(errs, fmt.Sprintf("MaxSize %d < 0", o.MaxSize))
	}
	if o.Queue < 0 {
		errs = append(errs, fmt.Sprintf("Queue %d < 0", o.Queue))
	}
	if o.Level < gzip.HuffmanOnly || o.Level > gzip.BestCompression {
		errs = append(errs, fmt.Sprintf("Level %d", o.Level))
	}
	// Prefix and NodeID start every WARC-Filename; Software and Info are
	// warcinfo fields (application/warc-fields).
	for _, f := range append([]Field{{"WARC-Filename", o.Prefix + "-" + o.NodeID + ".warc.gz"}, {"software", o.Software}}, infoFields(o.Info)...) {
		if err := checkField(f.Name, f.Value); err != nil {
			errs = append(errs, err.Error())
		}
	}
	sort.Strings(errs)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrBadOptions, strings.Join(errs, "; "))
	}
	return nil
}

// infoFields are the fields of info in sorted key order.
func infoFields(info map[string]string) []Field {
	keys := make([]string, 0, len(info))
	for k := range info {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fs := make([]Field, len(keys))
	for i, k := range keys {
		fs[i] = Field{k, info[k]}
	}
	return fs
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Stats are the Writer's counters.
type Stats struct {
	Files    int   // files opened
	Records  int64 // records written, warcinfo included
	Fetches  int64 // WriteFetch calls that succeeded
	Revisits int64 // of which written as revisit records
	Bytes    int64 // compressed bytes written
	// Repaired counts torn files found at open (left by a crash), CutBytes
	// the bytes cut from their tails.
	Repaired int
	CutBytes int64
}

// Writer writes WARC files. Safe for concurrent use; must be Closed.
//
// Callers build and compress their records in their own goroutine
// (WriteFetch, WriteRecord); one writer goroutine appends them to the file,
// flushes once per batch of queued calls (a record is in the OS before its
// call returns, so it survives kill -9) and rotates files.
type Writer struct {
	o    Options
	jobs chan *job
	done chan struct{} // closed when run returns
	seen *digestMemory

	sendMu sync.RWMutex // held for reading while sending on jobs
	closed bool         // under sendMu

	mu    sync.Mutex // guards stats and files
	stats Stats
	files []string

	// Owned by the run goroutine.
	cur    *file
	serial int
	err    error // sticky write error: the file is no longer well-formed
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
	w := &Writer{o: o, jobs: make(chan *job, o.Queue), done: make(chan struct{})}
	if o.RevisitMemory > 0 {
		w.seen = newDigestMemory(o.RevisitMemory)
	}
	if err := w.repair(); err != nil {
		return nil, err
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
	err     error
	done    chan struct{}
}

// member is one record compressed as its own gzip member.
type member struct {
	gz  []byte
	id  string
	cdx *cdxEntry // non-nil for response and revisit records
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
		for _, j := range batch {
			close(j.done)
		}
	}
	if err := w.closeFile(); err != nil && w.err == nil {
		w.err = err // Close reports it
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

// file is the WARC file being written and its index.
type file struct {
	name string // final path
	f    *os.File
	bw   *bufio.Writer
	n    int64 // bytes written
	cdx  *os.File
	cbw  *bufio.Writer
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
		off := c.n
		if _, err := c.bw.Write(m.gz); err != nil {
			return w.fail(fmt.Errorf("warc: writing %s: %w", c.name, err))
		}
		c.n += int64(len(m.gz))
		j.locs[i] = Location{File: filepath.Base(c.name), Offset: off, Length: int64(len(m.gz)), RecordID: m.id}
		if m.cdx != nil && c.cbw != nil {
			m.cdx.offset, m.cdx.length, m.cdx.filename = off, int64(len(m.gz)), filepath.Base(c.name)
			c.cbw.WriteString(m.cdx.line())
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
	if w.cur.cbw != nil {
		if err := w.cur.cbw.Flush(); err != nil {
			return w.fail(fmt.Errorf("warc: writing index of %s: %w", w.cur.name, err))
		}
	}
	return nil
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
	info := w.warcinfo(filepath.Base(name), now)
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
func (w *Writer) warcinfo(name string, now time.Time) []byte {
	var info strings.Builder
	fmt.Fprintf(&info, "software: %s\r\nformat: WARC File Format 1.1\r\nconformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n", w.o.Software)
	for _, f := range infoFields(w.o.Info) {
		fmt.Fprintf(&info, "%s: %s\r\n", f.Name, f.Value)
	}
	p := &pending{
		typ: "warcinfo", id: "<" + w.o.NewID() + ">",
		fields: []Field{
			{"WARC-Date", now.Format(time.RFC3339Nano)},
			{"WARC-Filename", name},
			{"Content-Type", "application/warc-fields"},
		},
		head: []byte(info.String()),
	}
	p.digest()
	var buf bufferWriter
	if err := compress(&buf, p, w.o.Level); err != nil {
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
