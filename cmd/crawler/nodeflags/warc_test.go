package nodeflags

import (
	"flag"
	"fmt"
	"io"
	"testing"

	"github.com/sextant-crawler/sextant/internal/nodeconfig"
)

// --warc-compression and the node config's warc_compression set the same
// option; a bad value is refused by both.
func TestWARCCompressionAgrees(t *testing.T) {
	for _, c := range []string{"huffman", "store", "7", "bogus"} {
		dir := t.TempDir()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		nf := Add(fs)
		if err := fs.Parse([]string{"--data", dir, "--warc-compression", c}); err != nil {
			t.Fatal(err)
		}
		fromFlags, ferr := nf.Options(nil)
		if ferr == nil {
			ferr = fromFlags.Validate()
		}
		cfg, err := nodeconfig.Parse(fmt.Appendf(nil, `{"id": "n0", "members": [{"id": "n0", "addr": "127.0.0.1:7000"}], "warc_compression": %q,
			"data_dir": %q, "tls": {"ca": "ca.pem", "cert": "n0.pem", "key": "n0-key.pem"}, "seeds": ["http://a.test/"]}`, c, dir))
		if err != nil {
			t.Fatal(err)
		}
		fromFile, cerr := cfg.NodeOptions(nil, nil)
		if cerr == nil {
			cerr = cfg.Validate()
		}
		if cerr == nil {
			cerr = fromFile.Validate()
		}
		if c == "bogus" {
			if ferr == nil || cerr == nil {
				t.Errorf("%q: flags error %v, config error %v; want both", c, ferr, cerr)
			}
			continue
		}
		if ferr != nil || cerr != nil {
			t.Fatalf("%q: flags %v, config %v", c, ferr, cerr)
		}
		if fromFlags.WARCArchive.Compression != c || fromFile.WARCArchive.Compression != c {
			t.Errorf("%q: flags give %q, config %q", c, fromFlags.WARCArchive.Compression, fromFile.WARCArchive.Compression)
		}
	}
}
