package fetcher

import (
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// maxZstdWindow is RFC 9659's limit for zstd in HTTP (8 MiB); larger
// windows are refused rather than allocated.
const maxZstdWindow = 8 << 20

// MaxContentCodings is the most content codings a response may stack
// ("gzip, br" is two). Each costs a decoder (≈ 41 KiB for gzip, up to the
// zstd window), so an unbounded list lets a 256 KiB header cost gigabytes
// (52,000 layers). curl has refused more than 5 since CVE-2022-32206, and
// real servers send one, rarely two by misconfiguration: 5 refuses nothing
// curl fetches. Of them, at most one may be br or zstd (see codings).
const MaxContentCodings = 5

// newDecoder returns a reader of the decoded body for a Content-Encoding
// header value (several header lines joined with ","). Stacked encodings
// ("gzip, br") are decoded in reverse order. More than MaxContentCodings
// (identity and empty entries aside) fail with ErrTooManyEncodings before
// any decoder is made.
func newDecoder(contentEncoding string, r io.Reader) (io.ReadCloser, error) {
	var buf [MaxContentCodings]string
	encs, err := codings(contentEncoding, buf[:0])
	if err != nil {
		return nil, err
	}
	rc := io.NopCloser(r)
	var closers []io.Closer
	for _, enc := range encs {
		var next io.ReadCloser
		switch enc {
		case "gzip", "x-gzip":
			g, _ := gzipReaders.Get().(*gzip.Reader)
			var err error
			if g == nil {
				g, err = gzip.NewReader(rc)
			} else {
				err = g.Reset(rc)
			}
			if err != nil {
				return nil, fmt.Errorf("%w: gzip: %w", ErrEncoding, err)
			}
			next = pooledGzip{g}
		case "deflate":
			z, err := zlib.NewReader(rc)
			if err != nil {
				return nil, fmt.Errorf("%w: deflate: %w", ErrEncoding, err)
			}
			next = z
		case "br":
			b, _ := brReaders.Get().(*brotli.Reader)
			if b == nil {
				b = brotli.NewReader(rc)
			} else if err := b.Reset(rc); err != nil {
				return nil, fmt.Errorf("%w: br: %w", ErrEncoding, err)
			}
			next = pooledBrotli{b}
		case "zstd":
			z, _ := zstdReaders.Get().(*zstd.Decoder)
			var err error
			if z == nil {
				// Concurrency 1 decodes synchronously: no goroutines, so a
				// pooled decoder needs no Close.
				z, err = zstd.NewReader(rc, zstd.WithDecoderConcurrency(1),
					zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderLowmem(true))
			} else {
				err = z.Reset(rc)
			}
			if err != nil {
				return nil, fmt.Errorf("%w: zstd: %w", ErrEncoding, err)
			}
			next = pooledZstd{z}
		default:
			return nil, fmt.Errorf("%w: unsupported content-encoding %q", ErrEncoding, enc)
		}
		closers = append(closers, next)
		rc = next
	}
	return &multiCloser{ReadCloser: rc, closers: closers}, nil
}

// codings appends to out the codings listed in ce, last applied first, lower
// case, without identity and empty entries; it fails once more than
// MaxContentCodings are found, without splitting the whole header, or a
// second coding with a large window (br: 16 MiB, zstd: 8 MiB): each such
// decoder holds its window once a layer's content exceeds it, and a body
// stacking five cost five windows (80 MiB in brotli for a 9 MiB body).
// One stays within the body cap; nobody stacks two.
func codings(ce string, out []string) ([]string, error) {
	large := 0
	for rest := ce; ; {
		i := strings.LastIndexByte(rest, ',')
		enc := strings.ToLower(strings.TrimSpace(rest[i+1:]))
		if enc != "" && enc != "identity" {
			if len(out) == MaxContentCodings {
				return nil, fmt.Errorf("%w: %w: more than %d listed", ErrEncoding, ErrTooManyEncodings, MaxContentCodings)
			}
			if enc == "br" || enc == "zstd" {
				if large++; large > 1 {
					return nil, fmt.Errorf("%w: %w: more than one of br and zstd", ErrEncoding, ErrTooManyEncodings)
				}
			}
			out = append(out, enc)
		}
		if i < 0 {
			return out, nil
		}
		rest = rest[:i]
	}
}

// gzipReaders recycles gzip readers (each holds ~40 KiB of inflate state).
var gzipReaders sync.Pool

type pooledGzip struct{ *gzip.Reader }

func (p pooledGzip) Close() error {
	err := p.Reader.Close()
	gzipReaders.Put(p.Reader)
	return err
}

// brReaders recycles brotli readers.
var brReaders sync.Pool

type pooledBrotli struct{ *brotli.Reader }

func (b pooledBrotli) Close() error {
	brReaders.Put(b.Reader)
	return nil
}

// zstdReaders recycles zstd decoders (their window buffers are large).
var zstdReaders sync.Pool

type pooledZstd struct{ *zstd.Decoder }

func (z pooledZstd) Close() error {
	z.Decoder.Reset(nil) // drop the reference to the finished stream
	zstdReaders.Put(z.Decoder)
	return nil
}

type multiCloser struct {
	io.ReadCloser
	closers []io.Closer
}

func (m *multiCloser) Close() error {
	for _, c := range m.closers {
		c.Close()
	}
	return nil
}
