package nodeconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// ca_file (crawl --ca-file in a node config): resolved against the
// config's directory, its CA trusted by the fetcher, a file without a PEM
// certificate refused as invalid.
func TestCAFile(t *testing.T) {
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	if err := tlsutil.WriteCluster(pki, []string{"node-0", "node-1"}, []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	cert, key := tlsutil.NodeFiles("pki", "node-1")
	cfg := strings.Replace(good, `"tls": {"ca": "pki/ca.pem", "cert": "pki/node-1.pem", "key": "/abs/node-1-key.pem"},`,
		`"tls": {"ca": "pki/ca.pem", "cert": "`+cert+`", "key": "`+key+`"}, "ca_file": "web-ca.pem",`, 1)
	p := filepath.Join(dir, "node.json")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(filepath.Join(pki, "ca.pem")) // any CA will do
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, content string
		ok            bool
	}{{"a CA", string(pem), true}, {"not PEM", "junk\n", false}} {
		if err := os.WriteFile(filepath.Join(dir, "web-ca.pem"), []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if c.CAFile != filepath.Join(dir, "web-ca.pem") {
			t.Fatalf("ca_file %q not resolved against %s", c.CAFile, dir)
		}
		mo, err := c.MemberOptions([]string{"http://h1.sim.test/"}, nil)
		switch {
		case tc.ok && (err != nil || mo.Node.Fetcher.TLSConfig == nil || mo.Node.Fetcher.TLSConfig.RootCAs == nil):
			t.Errorf("%s: %v, fetcher TLS %v", tc.name, err, mo.Node.Fetcher.TLSConfig)
		case !tc.ok && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "ca_file")):
			t.Errorf("%s: %v, want an ErrInvalid naming ca_file", tc.name, err)
		}
	}
}
