package warc

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
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
	// Compression is how records are compressed (ParseCompression):
	// "fast" (deflate level 1), "huffman" (Huffman coding only, no match
	// search), "store" (stored deflate blocks: still one gzip member per
	// record) or a level "1".."9"; default CompressionFast (at the default
	// zlib level, compressing cost a crawl more CPU than extracting links:
	// docs/bench/warc.md). Bodies already compressed (images, video,
	// archives, a compressing Content-Encoding) are stored at every
	// setting: precompressed.go.
	Compression string
	// RequestLevel is the gzip level of request records; default
	// gzip.NoCompression (0: stored blocks). A request record is ~600
	// bytes of headers: at level 1 a gzip member pays a Huffman table for
	// them, 12 µs of a page's CPU to save ~40% of 600 bytes
	// (docs/bench/warc.md, issue 27).
	RequestLevel int
	// Queue is how many fetches may wait for the writer goroutine; default
	// 64. A full queue makes WriteFetch wait (back-pressure).
	Queue int
	// RevisitMemory is how many payload digests are remembered to write
	// later identical payloads as revisit records; default 100000,
	// negative: no revisit records. Oldest digests are forgotten first.
	// They survive a restart in Dir/PREFIX-NODEID.digests (revisit.go;
	// after a kill -9, all but the last few written).
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
	if o.Compression == "" {
		o.Compression = CompressionFast
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
	if _, err := ParseCompression(o.Compression); err != nil {
		errs = append(errs, err.Error())
	}
	if o.RequestLevel < gzip.HuffmanOnly || o.RequestLevel > gzip.BestCompression {
		errs = append(errs, fmt.Sprintf("RequestLevel %d", o.RequestLevel))
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
	return uuidURN(b)
}

const hexDigits = "0123456789abcdef"

// uuidURN is "urn:uuid:" and b in the 8-4-4-4-12 hex form, without fmt
// (three IDs a page: fmt was 5% of archiving a stored page).
func uuidURN(b [16]byte) string {
	const prefix = "urn:uuid:"
	var s [len(prefix) + 36]byte
	copy(s[:], prefix)
	i := len(prefix)
	for j, c := range b {
		if j == 4 || j == 6 || j == 8 || j == 10 {
			s[i] = '-'
			i++
		}
		s[i], s[i+1] = hexDigits[c>>4], hexDigits[c&0xf]
		i += 2
	}
	return string(s[:])
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

// Compression settings (Options.Compression).
const (
	CompressionFast    = "fast"    // deflate level 1 (gzip.BestSpeed)
	CompressionHuffman = "huffman" // Huffman coding only (gzip.HuffmanOnly)
	// CompressionStore writes stored deflate blocks (gzip.NoCompression):
	// files stay .warc.gz, one gzip member per record, so that offsets,
	// CDXJ indexes, crash repair and every reader work unchanged; a member
	// costs 23 bytes more than the record and a CRC-32.
	CompressionStore = "store"
)

// ParseCompression returns the gzip level of a compression setting:
// "fast", "huffman", "store" or "1".."9".
func ParseCompression(s string) (int, error) {
	switch s {
	case CompressionFast:
		return gzip.BestSpeed, nil
	case CompressionHuffman:
		return gzip.HuffmanOnly, nil
	case CompressionStore:
		return gzip.NoCompression, nil
	}
	if len(s) == 1 && s[0] >= '1' && s[0] <= '9' {
		return int(s[0] - '0'), nil
	}
	return 0, fmt.Errorf("Compression %q: want fast, huffman, store or 1-9", s)
}
