package warc

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// cdxEntry is one CDXJ line: a response or revisit record.
type cdxEntry struct {
	url      string
	date     time.Time
	mime     string
	status   string
	digest   string // "sha1:..."
	offset   int64
	length   int64
	filename string
}

// line is "SURT TIMESTAMP14 {json}\n".
func (e *cdxEntry) line() string { return string(e.appendLine(make([]byte, 0, 384))) }

// appendLine appends the line to b. The JSON block is written by hand, in
// the field order pywb writes (numbers as strings, as pywb writes them):
// byte for byte what encoding/json's Encoder writes with HTML escaping
// off (TestCDXJLineEqualsEncodingJSON), for less CPU (docs/bench/warc.md).
func (e *cdxEntry) appendLine(b []byte) []byte {
	b = append(b, SURT(e.url)...)
	b = e.date.UTC().AppendFormat(append(b, ' '), "20060102150405")
	b = appendJSONString(append(b, ` {"url":`...), e.url)
	b = appendJSONString(append(b, `,"mime":`...), e.mime)
	if e.status != "" { // omitempty
		b = appendJSONString(append(b, `,"status":`...), e.status)
	}
	b = appendJSONString(append(b, `,"digest":`...), strings.TrimPrefix(e.digest, "sha1:"))
	b = strconv.AppendInt(append(b, `,"length":"`...), e.length, 10)
	b = strconv.AppendInt(append(b, `","offset":"`...), e.offset, 10)
	b = appendJSONString(append(b, `","filename":`...), e.filename)
	return append(b, "}\n"...)
}

// appendJSONString appends s as a JSON string the way encoding/json does
// without HTML escaping: quote and backslash escaped, \b \f \n \r \t
// short, other control characters as \u00xx, invalid UTF-8 as \ufffd,
// U+2028 and U+2029 escaped, everything else as is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// SURT returns the Sort-friendly URI Reordering Transform of a URL as
// pywb's indexes key it: scheme dropped, host reversed with commas and
// without a leading "www.", a non-default port after the host, then ")"
// and the path and query (query arguments sorted), all lower-case;
// the fragment is dropped. A string that is no URL is lower-cased.
func SURT(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return strings.ToLower(raw)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	var key string
	if _, err := netip.ParseAddr(host); err == nil {
		key = host // addresses are not reversed
	} else {
		labels := strings.Split(host, ".")
		if len(labels) > 2 && isWWW(labels[0]) {
			labels = labels[1:]
		}
		slices.Reverse(labels)
		key = strings.Join(labels, ",")
	}
	if port != "" {
		key += ":" + port
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	key += ")" + path
	if u.RawQuery != "" {
		args := strings.Split(u.RawQuery, "&")
		slices.Sort(args)
		key += "?" + strings.Join(args, "&")
	}
	return strings.ToLower(key)
}

// isWWW reports "www" or "www" followed by digits.
func isWWW(l string) bool {
	rest, ok := strings.CutPrefix(l, "www")
	if !ok {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// sortIndexFile writes the lines of src sorted into dst (by key, then
// timestamp: what a binary search needs) and removes src.
func sortIndexFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := writeSorted(dst, strings.SplitAfter(string(b), "\n")); err != nil {
		return err
	}
	return os.Remove(src)
}

func writeSorted(dst string, lines []string) error {
	lines = slices.DeleteFunc(lines, func(s string) bool { return s == "" })
	slices.Sort(lines)
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	for _, l := range lines {
		bw.WriteString(l)
	}
	err = bw.Flush()
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	return err
}

// IndexLines returns the CDXJ lines of the response and revisit records of
// a .warc.gz file (one gzip member per record), sorted.
func IndexLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	name := filepath.Base(path)
	err = ScanMembers(f, func(m Member) error {
		if e, ok := entryOf(m, name); ok {
			lines = append(lines, e.line())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("warc: indexing %s: %w", path, err)
	}
	slices.Sort(lines)
	return lines, nil
}

// WriteIndex writes the CDXJ index of a .warc.gz file beside it
// (NAME.cdxj) and returns its path and line count.
func WriteIndex(path string) (string, int, error) {
	lines, err := IndexLines(path)
	if err != nil {
		return "", 0, err
	}
	dst := cdxjName(path)
	return dst, len(lines), writeSorted(dst, lines)
}

// entryOf is the index entry of a response or revisit record.
func entryOf(m Member, filename string) (cdxEntry, bool) {
	r := m.Record
	typ := r.Get("WARC-Type")
	if typ != "response" && typ != "revisit" {
		return cdxEntry{}, false
	}
	date, err := time.Parse(time.RFC3339Nano, r.Get("WARC-Date"))
	if err != nil {
		return cdxEntry{}, false
	}
	e := cdxEntry{url: r.Get("WARC-Target-URI"), date: date, mime: "unk", digest: r.Get("WARC-Payload-Digest"),
		offset: m.Offset, length: m.Length, filename: filename}
	if resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(r.Block)), nil); err == nil {
		e.status = strconv.Itoa(resp.StatusCode)
		e.mime = mediaType(resp.Header.Get("Content-Type"))
		resp.Body.Close()
	}
	if typ == "revisit" {
		e.mime = "warc/revisit"
	}
	return e, true
}
