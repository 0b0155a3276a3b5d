package crawl

import (
	"io"

	"github.com/sextant-crawler/sextant/internal/warc"
)

// payloadDigest is Heritrix's crawl-log digest of a body: "sha1:" and the
// base32 SHA-1 of its bytes. The fetcher hands over the body decoded (no
// Content-Encoding), so for a compressed response this differs from the
// WARC-Payload-Digest of the bytes as sent; when the node archives, the
// WARC writer's digest (warc.Location) is logged instead. warc.Digest
// reads through a pooled buffer (io.Copy allocated 32 KiB per page).
func payloadDigest(r *io.SectionReader) (string, error) { return warc.Digest(r) }
