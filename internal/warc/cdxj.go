package warc

import (
	"bufio"
	"bytes"
	"encoding/json"
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

// cdxJSON is the JSON block of a CDXJ line, in the field order pywb
// writes (numbers as strings, as pywb writes them).
type cdxJSON struct {
	URL      string `json:"url"`
	Mime     string `json:"mime"`
	Status   string `json:"status,omitempty"`
	Digest   string `json:"digest"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
}

// line is "SURT TIMESTAMP14 {json}\n".
func (e *cdxEntry) line() string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(cdxJSON{
		URL: e.url, Mime: e.mime, Status: e.status,
		Digest: strings.TrimPrefix(e.digest, "sha1:"),
		Length: strconv.FormatInt(e.length, 10), Offset: strconv.FormatInt(e.offset, 10),
		Filename: e.filename,
	})
	return SURT(e.url) + " " + e.date.UTC().Format("20060102150405") + " " + b.String()
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
