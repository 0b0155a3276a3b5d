package crawl

import (
	"crypto/sha1"
	"encoding/base32"
	"io"
)

// payloadDigest is Heritrix's crawl-log digest of a body: "sha1:" and the
// base32 SHA-1 of its bytes. The fetcher hands over the body decoded (no
// Content-Encoding), so for a compressed response this differs from the
// WARC-Payload-Digest of the bytes as sent; when the node archives, the
// WARC writer's digest (warc.Location) is logged instead.
func payloadDigest(r io.Reader) (string, error) {
	h := sha1.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return "sha1:" + base32.StdEncoding.EncodeToString(h.Sum(nil)), nil
}
