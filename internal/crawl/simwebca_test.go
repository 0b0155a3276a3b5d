package crawl

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"

	"github.com/sextant-crawler/sextant/simweb"
)

// simwebCAEnv carries the PEM of the parent's simweb CA to the child
// processes of the kill tests: simweb's HTTPS hosts are signed by a CA it
// makes at start, which only the parent has.
const simwebCAEnv = "SEXTANT_SIMWEB_CA"

// caEnv is the environment entry handing srv's CA to a child.
func caEnv(srv *simweb.Server) string { return simwebCAEnv + "=" + string(srv.CAPEM()) }

// childTLS is the TLS config of a child: it trusts the parent's simweb CA.
func childTLS(t testing.TB) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(os.Getenv(simwebCAEnv))) {
		t.Fatalf("no simweb CA in $%s", simwebCAEnv)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
