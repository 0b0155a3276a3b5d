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

// newDecoder returns a reader of the decoded body for a Content-Encoding
// header value. Stacked encodings ("gzip, br") are decoded in reverse order.
func newDecoder(contentEncoding string, r io.Reader) (io.ReadCloser, error) {
	rc := io.NopCloser(r)
	var closers []io.Closer
	encs := strings.Split(contentEncoding, ",")
	for i := len(encs) - 1; i >= 0; i-- {
		enc := strings.ToLower(strings.TrimSpace(encs[i]))
		var next io.ReadCloser
		switch enc {
		case "", "identity":
			continue
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
