package warc

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"hash"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
)

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
// received.
type Fetch struct {
	URL  string
	Date time.Time // when the fetch started; default Now()
	IP   string    // optional WARC-IP-Address

	Method        string      // default GET
	RequestHeader http.Header // as sent (Host is added if missing)

	Proto      string // default "HTTP/1.1"
	StatusCode int
	Status     string // "OK" or http.Response.Status ("200 OK"); default http.StatusText
	// Header is the response header as received. Transfer-Encoding is
	// dropped: Body holds the entity without it (WARC 1.1 §6.3.2).
	Header http.Header
	// Body is the entity as received: still content-encoded (gzip, br...),
	// transfer-encoding removed; nil for none.
	Body *io.SectionReader
	// Truncated: Body was cut by a size cap (WARC-Truncated: length).
	Truncated bool
	// Outlinks, if non-empty, are written in a metadata record
	// ("outlink: URL") concurrent to the response.
	Outlinks []string
	// NotModified: the response is a 304 to a conditional request. It is
	// written as a revisit record of profile server-not-modified (WARC 1.1
	// §6.7.3), referring to the URL's capture at RefersToDate (optional).
	NotModified  bool
	RefersToDate time.Time
}

// Revisit profile of WARC 1.1 §6.7.2.
const ProfileIdenticalPayload = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"

// Revisit profile of WARC 1.1 §6.7.3.
const ProfileServerNotModified = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"

// WriteFetch writes f as a response record (or, if an earlier record of
// this Writer had the same non-empty payload, a revisit record holding
// only the HTTP head), its request record and, with Outlinks, a metadata
// record. It returns when the records are in the file (in the OS: they
// survive kill -9 of this process).
func (w *Writer) WriteFetch(f Fetch) (Location, error) { return w.StartFetch(f)() }

// StartFetch is WriteFetch in two halves: it builds and compresses f's
// records (f's body is not read after it returns) and queues them; the
// function it returns waits until they are written and returns their
// Location. Call it exactly once. The caller may do other work between
// the two (a crawl worker routes the page's links).
func (w *Writer) StartFetch(f Fetch) func() (Location, error) {
	loc, err := w.startFetch(f)
	if err != nil {
		return func() (Location, error) { return Location{}, err }
	}
	return loc
}

func (w *Writer) startFetch(f Fetch) (func() (Location, error), error) {
	if f.URL == "" || f.StatusCode < 100 || f.StatusCode > 999 {
		return nil, fmt.Errorf("%w: url %q status %d", ErrBadFetch, f.URL, f.StatusCode)
	}
	if f.Date.IsZero() {
		f.Date = w.o.Now()
	}
	date := f.Date.UTC().Format(time.RFC3339Nano)
	body := f.Body
	if body == nil {
		body = emptySection()
	}
	proto := f.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	respHead := responseHead(proto, f.StatusCode, f.Status, f.Header)
	payloadDigest, blockDigest, err := digests(respHead, body)
	if err != nil {
		return nil, err
	}
	common := []Field{{"WARC-Target-URI", f.URL}, {"WARC-Date", date}}
	if f.IP != "" {
		common = append(common, Field{"WARC-IP-Address", f.IP})
	}
	info := *w.infoID.Load()
	common = append(common, Field{"WARC-Warcinfo-ID", info})
	if err := checkFields(common); err != nil {
		return nil, err
	}
	resp := &pending{typ: "response", id: "<" + w.o.NewID() + ">", head: respHead, body: body, blockDigest: blockDigest}
	resp.fields = append(append(resp.fields, common...),
		Field{"Content-Type", "application/http;msgtype=response"},
		Field{"WARC-Payload-Digest", payloadDigest})
	var prior digestEntry
	revisit := false
	if w.seen != nil && body.Size() > 0 && !f.Truncated {
		prior, revisit = w.seen.get(payloadDigest)
	}
	if revisit {
		resp.typ, resp.body = "revisit", emptySection()
		resp.fields = append(resp.fields,
			Field{"WARC-Profile", ProfileIdenticalPayload},
			Field{"WARC-Refers-To", prior.id},
			Field{"WARC-Refers-To-Target-URI", prior.uri},
			Field{"WARC-Refers-To-Date", prior.date})
		resp.digest()
	} else if f.NotModified {
		revisit = true
		resp.typ, resp.body = "revisit", emptySection()
		resp.fields = append(resp.fields, Field{"WARC-Profile", ProfileServerNotModified}, Field{"WARC-Refers-To-Target-URI", f.URL})
		if !f.RefersToDate.IsZero() {
			resp.fields = append(resp.fields, Field{"WARC-Refers-To-Date", f.RefersToDate.UTC().Format(time.RFC3339Nano)})
		}
		resp.digest()
	} else if f.Truncated {
		resp.fields = append(resp.fields, Field{"WARC-Truncated", "length"})
	}
	req := &pending{typ: "request", id: "<" + w.o.NewID() + ">", head: requestHead(f.Method, f.URL, proto, f.RequestHeader), body: emptySection()}
	req.fields = append(append(req.fields, common...),
		Field{"Content-Type", "application/http;msgtype=request"},
		Field{"WARC-Concurrent-To", resp.id})
	req.digest()
	ps := []*pending{resp, req}
	if len(f.Outlinks) > 0 {
		ps = append(ps, w.outlinks(f.Outlinks, common, resp.id))
	}
	status := strconv.Itoa(f.StatusCode)
	mt := mediaType(f.Header.Get("Content-Type"))
	if revisit {
		mt = "warc/revisit"
	}
	// A body already compressed is stored (precompressed.go).
	stored := w.level != gzip.NoCompression && resp.body.Size() > 0 && precompressed(f.Header, resp.body)
	j := &job{}
	if w.seen != nil && !revisit && body.Size() > 0 && !f.Truncated {
		j.remember = &remembered{payloadDigest, digestEntry{id: resp.id, uri: f.URL, date: date}}
	}
	for i, p := range ps {
		buf := bufferWriter{b: getBuf()}
		level := w.level
		switch {
		case p == req:
			level = w.o.RequestLevel
		case p == resp && stored:
			level = gzip.NoCompression
		}
		if err := compress(&buf, p, level); err != nil {
			j.release()
			return nil, err
		}
		m := member{gz: buf.b, id: p.id, info: info, level: level}
		if i == 0 {
			m.cdx = &cdxEntry{url: f.URL, date: f.Date, mime: mt, status: status, digest: payloadDigest}
		}
		j.members = append(j.members, m)
	}
	if err := w.enqueue(j); err != nil {
		j.release()
		return nil, err
	}
	return func() (Location, error) {
		<-j.done
		defer j.release()
		if j.err != nil {
			return Location{}, j.err
		}
		return w.fetchDone(j, payloadDigest, revisit), nil
	}, nil
}

// outlinks is the metadata record of a response's outlinks.
func (w *Writer) outlinks(links []string, common []Field, respID string) *pending {
	var b bytes.Buffer
	for _, l := range links {
		if strings.ContainsAny(l, "\r\n") {
			continue
		}
		fmt.Fprintf(&b, "outlink: %s L\r\n", l)
	}
	md := &pending{typ: "metadata", id: "<" + w.o.NewID() + ">", head: b.Bytes(), body: emptySection()}
	md.fields = append(append(md.fields, common...),
		Field{"Content-Type", "application/warc-fields"},
		Field{"WARC-Concurrent-To", respID})
	md.digest()
	return md
}

// fetchDone counts a written fetch and returns its Location.
func (w *Writer) fetchDone(j *job, payloadDigest string, revisit bool) Location {
	loc := j.locs[0]
	loc.PayloadDigest, loc.Revisit = payloadDigest, revisit
	w.mu.Lock()
	w.stats.Fetches++
	if revisit {
		w.stats.Revisits++
	}
	w.mu.Unlock()
	return loc
}

// WriteRecord writes one record of any type and returns its location.
func (w *Writer) WriteRecord(r Record) (Location, error) {
	if r.Type == "" {
		return Location{}, fmt.Errorf("%w: record without WARC-Type", ErrBadFetch)
	}
	p := &pending{typ: r.Type, body: r.Block}
	if p.body == nil {
		p.body = emptySection()
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
	// A record names its file's warcinfo unless it is one or names one
	// itself (a record copied from another file keeps its own).
	var info string
	if !strings.EqualFold(p.typ, "warcinfo") && !hasField(p.fields, "WARC-Warcinfo-ID") {
		info = *w.infoID.Load()
		p.fields = append(p.fields, Field{"WARC-Warcinfo-ID", info})
	}
	if err := checkFields(append([]Field{{"WARC-Type", p.typ}, {"WARC-Record-ID", p.id}}, p.fields...)); err != nil {
		return Location{}, err
	}
	if err := p.digest(); err != nil {
		return Location{}, err
	}
	var buf bufferWriter
	if err := compress(&buf, p, w.level); err != nil {
		return Location{}, err
	}
	j := &job{members: []member{{gz: buf.b, id: p.id, info: info, level: w.level}}}
	if err := w.submit(j); err != nil {
		return Location{}, err
	}
	return j.locs[0], nil
}

func emptySection() *io.SectionReader { return io.NewSectionReader(bytes.NewReader(nil), 0, 0) }

// mediaType is Content-Type's media type, lower-case, or
// "unk" (what pywb's indexer writes for none).
func mediaType(ct string) string {
	if ct == "" {
		return "unk"
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	if mt == "" {
		return "unk"
	}
	return mt
}

// responseHead is the status line and header of a response as received,
// without Transfer-Encoding (the body is stored de-chunked).
func responseHead(proto string, code int, status string, h http.Header) []byte {
	var b bytes.Buffer
	// Status may be the reason phrase or net/http's "200 OK".
	reason := strings.TrimPrefix(status, strconv.Itoa(code))
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = http.StatusText(code)
	}
	b.Grow(512)
	b.WriteString(proto)
	b.WriteByte(' ')
	b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(code), 10))
	b.WriteByte(' ')
	b.WriteString(noCRLF(reason))
	b.WriteString("\r\n")
	writeHeader(&b, h, "Transfer-Encoding")
	return b.Bytes()
}

// requestHead is the request line and the header as sent.
func requestHead(method, rawURL, proto string, h http.Header) []byte {
	var b bytes.Buffer
	if method == "" {
		method = http.MethodGet
	}
	target, host := requestTarget(rawURL)
	b.Grow(512)
	for _, s := range []string{method, " ", target, " ", proto, "\r\n"} {
		b.WriteString(s)
	}
	if h.Get("Host") == "" && host != "" {
		b.WriteString("Host: ")
		b.WriteString(host)
		b.WriteString("\r\n")
	}
	writeHeader(&b, h, "")
	return b.Bytes()
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

// pending is a record with its digest computed, ready to compress.
type pending struct {
	typ, id     string
	fields      []Field
	head        []byte // block prefix (HTTP head), may be nil
	body        *io.SectionReader
	blockDigest string
}

func (p *pending) digest() error {
	if p.body == nil {
		p.body = emptySection()
	}
	_, d, err := digests(p.head, p.body)
	p.blockDigest = d
	return err
}

var b32 = base32.StdEncoding

// digests returns the SHA-1 digests of body (the payload) and of head
// followed by body (the block), in one read of body.
func digests(head []byte, body *io.SectionReader) (payload, block string, err error) {
	var ps, bs hash.Hash = sha1.New(), sha1.New()
	bs.Write(head)
	if _, err := copyBody(io.MultiWriter(ps, bs), body); err != nil {
		return "", "", fmt.Errorf("warc: reading body: %w", err)
	}
	return "sha1:" + b32.EncodeToString(ps.Sum(nil)), "sha1:" + b32.EncodeToString(bs.Sum(nil)), nil
}

// writeHeader writes h in sorted order (net/http keeps no order), skipping
// the field named skip.
func writeHeader(b *bytes.Buffer, h http.Header, skip string) {
	keys := make([]string, 0, len(h))
	for k := range h {
		if skip != "" && strings.EqualFold(k, skip) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			b.WriteString(k)
			b.WriteString(": ")
			b.WriteString(noCRLF(v))
			b.WriteString("\r\n")
		}
	}
	b.WriteString("\r\n")
}

// noCRLF replaces CR and LF by spaces (a value cannot break the head).
func noCRLF(v string) string {
	if !strings.ContainsAny(v, "\r\n") {
		return v
	}
	return crlfSpaces.Replace(v)
}

var crlfSpaces = strings.NewReplacer("\r", " ", "\n", " ")

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
