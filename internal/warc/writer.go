package warc

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
	Dir      string // required: where the files go (must exist)
	Prefix   string // file name prefix; default "sextant"
	MaxSize  int64  // rotate after a file reaches this many bytes; default 1 GiB
	Software string // warcinfo "software"; default "sextant"
	// Info is added to every warcinfo record (e.g. operator, hostname,
	// isPartOf), in sorted key order.
	Info map[string]string
	// Now is the clock for WARC-Date and file names; default time.Now.
	Now func() time.Time
	// NewID returns a fresh record ID without angle brackets; default a
	// random urn:uuid.
	NewID func() string
	// Level is the gzip level; default gzip.DefaultCompression.
	Level int
}

// EnsureDefaults fills zero fields.
func (o *Options) EnsureDefaults() {
	if o.Prefix == "" {
		o.Prefix = "sextant"
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
		o.Level = gzip.DefaultCompression
	}
}

// Validate reports every bad field.
func (o *Options) Validate() error {
	var errs []string
	if o.Dir == "" {
		errs = append(errs, "Dir is empty")
	}
	if strings.ContainsAny(o.Prefix, "/\\") {
		errs = append(errs, fmt.Sprintf("Prefix %q contains a path separator", o.Prefix))
	}
	if o.MaxSize < 0 {
		errs = append(errs, fmt.Sprintf("MaxSize %d < 0", o.MaxSize))
	}
	if o.Level < gzip.HuffmanOnly || o.Level > gzip.BestCompression {
		errs = append(errs, fmt.Sprintf("Level %d", o.Level))
	}
	// Prefix starts every WARC-Filename; Software and Info are warcinfo
	// fields (application/warc-fields).
	for _, f := range append([]Field{{"WARC-Filename", o.Prefix + ".warc.gz"}, {"software", o.Software}}, infoFields(o.Info)...) {
		if err := checkField(f.Name, f.Value); err != nil {
			errs = append(errs, err.Error())
		}
	}
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
	Files   int   // files opened
	Records int64 // records written, warcinfo included
	Fetches int64 // WriteFetch calls that succeeded
	Bytes   int64 // compressed bytes written
}

// Writer writes WARC files. Safe for concurrent use.
type Writer struct {
	o Options

	mu     sync.Mutex
	f      *os.File
	bw     *bufio.Writer
	cw     countWriter
	gz     *gzip.Writer
	name   string // final name of the current file
	infoID string // record ID of the current file's warcinfo
	serial int
	closed bool
	files  []string
	stats  Stats
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// NewWriter returns a Writer for o (defaults applied to a copy). The first
// file is created on the first write.
func NewWriter(o Options) (*Writer, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: Dir %q is not a directory", ErrBadOptions, o.Dir)
	}
	return &Writer{o: o}, nil
}

// Field is one named header field; order is kept.
type Field struct{ Name, Value string }

// Record is one WARC record to write. WriteRecord adds WARC-Record-ID,
// WARC-Date (unless Header has them), Content-Length and
// WARC-Block-Digest.
type Record struct {
	Type   string  // WARC-Type
	Header []Field // other named fields, in order
	Block  *io.SectionReader
}

// Fetch is one fetched URL: the request as sent and the response as
// received (body decoded, see the package doc).
type Fetch struct {
	URL  string
	Date time.Time // when the fetch started; default Now()
	IP   string    // optional WARC-IP-Address

	Method        string      // default GET
	RequestHeader http.Header // as sent (Host is added if missing)

	Proto      string // default "HTTP/1.1"
	StatusCode int
	Status     string // "OK" or http.Response.Status ("200 OK"); default http.StatusText
	Header     http.Header
	Body       *io.SectionReader // decoded body; nil for none
	// Raw: Body is exactly the bytes on the wire; keep the headers as they
	// are instead of rewriting them for a decoded body.
	Raw bool
}

// WriteFetch writes the response record and the request record of f and
// returns the response record's ID.
func (w *Writer) WriteFetch(f Fetch) (string, error) {
	if f.URL == "" || f.StatusCode < 100 || f.StatusCode > 999 {
		return "", fmt.Errorf("%w: url %q status %d", ErrBadFetch, f.URL, f.StatusCode)
	}
	if f.Date.IsZero() {
		f.Date = w.o.Now()
	}
	date := f.Date.UTC().Format(time.RFC3339Nano)
	body := f.Body
	if body == nil {
		body = io.NewSectionReader(bytes.NewReader(nil), 0, 0)
	}
	// Response block: status line, headers, body.
	var head bytes.Buffer
	proto := f.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	// Status may be the reason phrase or net/http's "200 OK".
	reason := strings.TrimPrefix(f.Status, strconv.Itoa(f.StatusCode)+" ")
	if reason == "" {
		reason = http.StatusText(f.StatusCode)
	}
	fmt.Fprintf(&head, "%s %d %s\r\n", proto, f.StatusCode, reason)
	h := f.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if !f.Raw {
		for _, name := range []string{"Content-Encoding", "Transfer-Encoding", "Content-Length"} {
			if v, ok := h[name]; ok {
				h["X-Sextant-Orig-"+name] = v
				delete(h, name)
			}
		}
		h.Set("Content-Length", strconv.FormatInt(body.Size(), 10))
	}
	writeHeader(&head, h)
	payloadDigest, err := digest(nil, body)
	if err != nil {
		return "", err
	}
	respHead := head.Bytes()
	respID := "<" + w.o.NewID() + ">"
	reqID := "<" + w.o.NewID() + ">"

	var rq bytes.Buffer
	method := f.Method
	if method == "" {
		method = http.MethodGet
	}
	target, host := requestTarget(f.URL)
	fmt.Fprintf(&rq, "%s %s %s\r\n", method, target, proto)
	rh := f.RequestHeader.Clone()
	if rh == nil {
		rh = http.Header{}
	}
	if rh.Get("Host") == "" && host != "" {
		rh.Set("Host", host)
	}
	writeHeader(&rq, rh)

	common := []Field{{"WARC-Target-URI", f.URL}, {"WARC-Date", date}}
	if f.IP != "" {
		common = append(common, Field{"WARC-IP-Address", f.IP})
	}
	if err := checkFields(common); err != nil {
		return "", err
	}
	resp := pending{
		typ: "response", id: respID,
		fields: append(append([]Field{}, common...),
			Field{"Content-Type", "application/http;msgtype=response"},
			Field{"WARC-Payload-Digest", payloadDigest}),
		head: respHead, body: body,
	}
	req := pending{
		typ: "request", id: reqID,
		fields: append(append([]Field{}, common...),
			Field{"Content-Type", "application/http;msgtype=request"},
			Field{"WARC-Concurrent-To", respID}),
		head: rq.Bytes(), body: io.NewSectionReader(bytes.NewReader(nil), 0, 0),
	}
	if err := resp.digest(); err != nil {
		return "", err
	}
	if err := req.digest(); err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.writeLocked(&resp); err != nil {
		return "", err
	}
	if err := w.writeLocked(&req); err != nil {
		return "", err
	}
	w.stats.Fetches++
	return respID, w.afterLocked()
}

// WriteRecord writes one record of any type and returns its ID.
func (w *Writer) WriteRecord(r Record) (string, error) {
	if r.Type == "" {
		return "", fmt.Errorf("%w: record without WARC-Type", ErrBadFetch)
	}
	p := pending{typ: r.Type, body: r.Block}
	if p.body == nil {
		p.body = io.NewSectionReader(bytes.NewReader(nil), 0, 0)
	}
	for _, f := range r.Header {
		switch strings.ToLower(f.Name) {
		case "warc-record-id":
			p.id = f.Value
		case "content-length", "warc-block-digest", "warc-type":
			// computed / given by Type
		default:
			p.fields = append(p.fields, f)
		}
	}
	if p.id == "" {
		p.id = "<" + w.o.NewID() + ">"
	}
	if !hasField(p.fields, "WARC-Date") {
		p.fields = append(p.fields, Field{"WARC-Date", w.o.Now().UTC().Format(time.RFC3339Nano)})
	}
	if err := checkFields(append([]Field{{"WARC-Type", p.typ}, {"WARC-Record-ID", p.id}}, p.fields...)); err != nil {
		return "", err
	}
	if err := p.digest(); err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.writeLocked(&p); err != nil {
		return "", err
	}
	return p.id, w.afterLocked()
}

// checkFields reports the first field of fs that cannot be written
// (checkField): the record is refused whole.
func checkFields(fs []Field) error {
	for _, f := range fs {
		if err := checkField(f.Name, f.Value); err != nil {
			return err
		}
	}
	return nil
}

func hasField(fs []Field, name string) bool {
	for _, f := range fs {
		if strings.EqualFold(f.Name, name) {
			return true
		}
	}
	return false
}

// pending is a record with its digest computed, ready to write.
type pending struct {
	typ, id     string
	fields      []Field
	head        []byte // block prefix (HTTP head), may be nil
	body        *io.SectionReader
	blockDigest string
}

func (p *pending) digest() error {
	d, err := digest(p.head, p.body)
	p.blockDigest = d
	return err
}

var b32 = base32.StdEncoding

func digest(prefix []byte, body *io.SectionReader) (string, error) {
	var s hash.Hash = sha1.New()
	s.Write(prefix)
	if _, err := io.Copy(s, io.NewSectionReader(body, 0, body.Size())); err != nil {
		return "", fmt.Errorf("warc: reading body: %w", err)
	}
	return "sha1:" + b32.EncodeToString(s.Sum(nil)), nil
}

func writeHeader(b *bytes.Buffer, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
			fmt.Fprintf(b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
}

func requestTarget(raw string) (target, host string) {
	rest, ok := strings.CutPrefix(raw, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(raw, "https://")
	}
	if !ok {
		return raw, ""
	}
	i := strings.IndexAny(rest, "/?#")
	if i < 0 {
		return "/", rest
	}
	host, target = rest[:i], rest[i:]
	if j := strings.IndexByte(target, '#'); j >= 0 {
		target = target[:j]
	}
	if !strings.HasPrefix(target, "/") {
		target = "/" + target
	}
	return target, host
}

// writeLocked writes p as one gzip member, opening a file if needed.
func (w *Writer) writeLocked(p *pending) error {
	if w.closed {
		return ErrClosed
	}
	if w.f == nil {
		if err := w.openLocked(); err != nil {
			return err
		}
	}
	w.gz.Reset(&w.cw)
	bw := bufio.NewWriter(w.gz)
	fmt.Fprintf(bw, "WARC/1.1\r\nWARC-Type: %s\r\nWARC-Record-ID: %s\r\n", p.typ, p.id)
	for _, f := range p.fields {
		fmt.Fprintf(bw, "%s: %s\r\n", f.Name, f.Value)
	}
	if p.typ != "warcinfo" && w.infoID != "" && !hasField(p.fields, "WARC-Warcinfo-ID") {
		fmt.Fprintf(bw, "WARC-Warcinfo-ID: %s\r\n", w.infoID)
	}
	size := int64(len(p.head)) + p.body.Size()
	fmt.Fprintf(bw, "WARC-Block-Digest: %s\r\nContent-Length: %d\r\n\r\n", p.blockDigest, size)
	bw.Write(p.head)
	if _, err := io.Copy(bw, io.NewSectionReader(p.body, 0, p.body.Size())); err != nil {
		return fmt.Errorf("warc: reading body: %w", err)
	}
	bw.WriteString("\r\n\r\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("warc: writing %s: %w", w.name, err)
	}
	if err := w.gz.Close(); err != nil {
		return fmt.Errorf("warc: writing %s: %w", w.name, err)
	}
	w.stats.Records++
	return nil
}

// afterLocked rotates the file once it has reached MaxSize.
func (w *Writer) afterLocked() error {
	if w.f != nil && w.cw.n >= w.o.MaxSize {
		return w.closeFileLocked()
	}
	return nil
}

func (w *Writer) openLocked() error {
	w.serial++
	now := w.o.Now().UTC()
	w.name = filepath.Join(w.o.Dir, fmt.Sprintf("%s-%s-%05d.warc.gz", w.o.Prefix, now.Format("20060102150405"), w.serial))
	f, err := os.OpenFile(w.name+".open", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("warc: %w", err)
	}
	w.f = f
	w.bw = bufio.NewWriterSize(f, 1<<16)
	w.cw = countWriter{w: w.bw}
	if w.gz == nil {
		w.gz, err = gzip.NewWriterLevel(&w.cw, w.o.Level)
		if err != nil {
			return fmt.Errorf("warc: %w", err)
		}
	}
	w.stats.Files++
	// warcinfo
	var info bytes.Buffer
	fmt.Fprintf(&info, "software: %s\r\nformat: WARC File Format 1.1\r\nconformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n", w.o.Software)
	for _, f := range infoFields(w.o.Info) {
		fmt.Fprintf(&info, "%s: %s\r\n", f.Name, f.Value)
	}
	p := pending{
		typ: "warcinfo", id: "<" + w.o.NewID() + ">",
		fields: []Field{
			{"WARC-Date", now.Format(time.RFC3339Nano)},
			{"WARC-Filename", filepath.Base(w.name)},
			{"Content-Type", "application/warc-fields"},
		},
		body: io.NewSectionReader(bytes.NewReader(info.Bytes()), 0, int64(info.Len())),
	}
	if err := p.digest(); err != nil {
		return err
	}
	w.infoID = ""
	if err := w.writeLocked(&p); err != nil {
		return err
	}
	w.infoID = p.id
	return nil
}

func (w *Writer) closeFileLocked() error {
	if w.f == nil {
		return nil
	}
	err := w.bw.Flush()
	if err2 := w.f.Close(); err == nil {
		err = err2
	}
	if err == nil {
		err = os.Rename(w.name+".open", w.name)
	}
	w.stats.Bytes += w.cw.n
	w.files = append(w.files, w.name)
	w.f, w.bw = nil, nil
	if err != nil {
		return fmt.Errorf("warc: closing %s: %w", w.name, err)
	}
	return nil
}

// Close flushes and closes the current file. Further writes fail with
// ErrClosed; Close is idempotent.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.closeFileLocked()
}

// Files returns the names of the files closed so far.
func (w *Writer) Files() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.files...)
}

// Stats returns the counters (Bytes counts closed files and the current one).
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	if w.f != nil {
		s.Bytes += w.cw.n
	}
	return s
}
