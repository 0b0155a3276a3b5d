package warc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lineJSON is a CDXJ line as encoding/json writes it (HTML escaping off):
// the reference of the hand-written line.
func (e *cdxEntry) lineJSON() string {
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

// awkward are the pieces random strings are made of: what JSON escapes
// (quotes, backslashes, every control character, U+2028/9), what
// json.Marshal would HTML-escape (<, >, &) but the encoder here must not,
// non-ASCII, invalid UTF-8 and URL syntax.
var awkward = func() []string {
	s := []string{`"`, `\`, "<", ">", "&", "\u2028", "\u2029", "\x7f", "é", "日本", "😀", "\xff", "\xc3", "\xe2\x80", "\ufffd",
		"http://", "https://www.", "a.test", ":8080", "/", "?", "=", "&", "#", "%22", "%zz", " ", "sha1:", "A", "z", "0", "\u00a0"}
	for c := range 0x20 {
		s = append(s, string(rune(c)))
	}
	return s
}()

func randomField(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(12) {
		if rng.IntN(4) == 0 {
			b.WriteByte(byte(rng.IntN(256))) // any byte at all
		} else {
			b.WriteString(awkward[rng.IntN(len(awkward))])
		}
	}
	return b.String()
}

func randomEntry(rng *rand.Rand) cdxEntry {
	e := cdxEntry{url: randomField(rng), mime: randomField(rng), status: randomField(rng), digest: randomField(rng),
		offset: rng.Int64(), length: rng.Int64N(1 << 40), filename: randomField(rng),
		date: time.Unix(rng.Int64N(1<<36)-1<<35, rng.Int64N(1e9)).In(time.FixedZone("x", rng.IntN(50000)-25000))}
	if rng.IntN(3) == 0 {
		e.url = "http://a.test/" + e.url
	}
	if rng.IntN(3) == 0 {
		e.status = "" // omitempty
	}
	if rng.IntN(2) == 0 {
		e.digest = "sha1:" + e.digest
	}
	return e
}

// The hand-written CDXJ line equals encoding/json's, byte for byte, for
// arbitrary fields: escaping of quotes and backslashes, the short and
// \u00XX forms of control characters, U+2028/U+2029, invalid UTF-8 as
// \ufffd, no HTML escaping, the omitted empty status.
func TestCDXJLineEqualsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	for i := range 20000 {
		e := randomEntry(rng)
		if got, want := e.line(), e.lineJSON(); got != want {
			t.Fatalf("entry %d %+v:\n got %q\nwant %q", i, e, got, want)
		}
	}
}

func FuzzCDXJLine(f *testing.F) {
	f.Add("http://a.test/\"<x>&\u2028", "text/html", "200", "sha1:ABC", "f.warc.gz", int64(0), int64(1), int64(1700000000))
	f.Add("\xff\x00\x1f", "", "", "", "\\", int64(-1), int64(-5), int64(-1<<40))
	f.Fuzz(func(t *testing.T, url, mime, status, digest, filename string, off, length, sec int64) {
		e := cdxEntry{url: url, mime: mime, status: status, digest: digest, filename: filename, offset: off, length: length,
			date: time.Unix(sec%(1<<36), 0)}
		if got, want := e.line(), e.lineJSON(); got != want {
			t.Fatalf("got %q\nwant %q", got, want)
		}
	})
}

// BenchmarkCDXJLine: a typical line, hand-written and through
// encoding/json.
func BenchmarkCDXJLine(b *testing.B) {
	e := cdxEntry{url: "https://www.host-0042.sim.test/articles/2024/05/some-page-title-17.html?ref=home&x=1", mime: "text/html", status: "200",
		digest: "sha1:2VFMDAVJZ7AHEGYY3Z4RGEJDK3J4LE2L", offset: 123456789, length: 6543, filename: "sextant-n0-20261126234148276-00001.warc.gz",
		date: time.Date(2026, 11, 26, 23, 41, 48, 276e6, time.UTC)}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = e.line()
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = e.lineJSON()
		}
	})
}

// uuidURN writes what fmt wrote before it.
func TestUUIDURN(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		want := fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
		if got := uuidURN(b); got != want {
			t.Fatalf("uuidURN(%x) = %q, want %q", b, got, want)
		}
	}
}
