package warc

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// precompressed reports whether a response body is already compressed, so
// that its record is written in stored deflate blocks whatever the
// Compression setting: deflate of such a body costs as much CPU as of
// HTML (the match search, then a Huffman pass) and saves nothing — on the
// benchmark web the PNGs and MP4s came out of level 1 larger than they went
// in (docs/bench/warc.md, 2026-11-27).
//
// Two signs, either enough: a Content-Encoding that compresses (the
// archived body is the wire's, still encoded) or the magic bytes of a
// compressed format at the body's start. Magic bytes rather than
// Content-Type: servers label images and archives application/octet-stream
// and worse, and the bytes cannot lie about themselves. PDF is not in the
// list: its text streams are often uncompressed, and deflate gains on it
// vary.
func precompressed(h http.Header, body *io.SectionReader) bool {
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			switch strings.ToLower(strings.TrimSpace(c)) {
			case "gzip", "x-gzip", "br", "zstd", "deflate", "compress", "x-compress":
				return true
			}
		}
	}
	var b [16]byte
	n, _ := body.ReadAt(b[:], 0)
	return compressedMagic(b[:n])
}

// magics are the leading bytes of compressed formats: archives, images,
// audio, video and fonts.
var magics = [][]byte{
	{0x1f, 0x8b},             // gzip
	{0x28, 0xb5, 0x2f, 0xfd}, // zstd
	[]byte("PK\x03\x04"),     // zip (docx, jar, epub…)
	[]byte("\xfd7zXZ\x00"),   // xz
	[]byte("7z\xbc\xaf\x27\x1c"),
	[]byte("Rar!\x1a\x07"),
	[]byte("\x89PNG\r\n\x1a\n"),
	{0xff, 0xd8, 0xff}, // JPEG
	[]byte("GIF87a"),
	[]byte("GIF89a"),
	{0x1a, 0x45, 0xdf, 0xa3}, // Matroska, WebM
	[]byte("OggS"),
	[]byte("fLaC"),
	[]byte("wOFF"),
	[]byte("wOF2"),
}

func compressedMagic(b []byte) bool {
	for _, m := range magics {
		if bytes.HasPrefix(b, m) {
			return true
		}
	}
	switch {
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return true // WAV and AVI are RIFF too, and not compressed
	case len(b) >= 8 && string(b[4:8]) == "ftyp":
		return true // ISO media: MP4, MOV, M4A, HEIC, AVIF
	case len(b) >= 10 && string(b[:3]) == "BZh" && b[3] >= '1' && b[3] <= '9' && string(b[4:10]) == "1AY&SY":
		return true // bzip2: "BZh" alone starts English words too
	case len(b) >= 5 && string(b[:3]) == "ID3" && b[3] >= 2 && b[3] <= 4 && b[4] == 0:
		return true // MP3 with an ID3v2 tag
	case len(b) >= 2 && b[0] == 0xff && (b[1] == 0xfb || b[1] == 0xf3 || b[1] == 0xf2):
		return true // an MP3 frame
	}
	return false
}
