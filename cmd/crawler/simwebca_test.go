package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-crawler/sextant/simweb"
)

// writeSimwebCA writes srv's CA (which signs its HTTPS hosts) into dir for
// --ca-file and the node config's ca_file, and returns its path.
func writeSimwebCA(t *testing.T, srv *simweb.Server, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "simweb-ca.pem")
	if err := os.WriteFile(p, srv.CAPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
