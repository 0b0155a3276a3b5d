package crawl

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// TestUntrustedCertLoggedWithCause: a host whose certificate the crawler
// does not trust has each of its URLs logged as robots.txt unreachable
// with the cause (unknown authority), at once: robots.txt is requested
// once, not retried at 5 and 15 s as for an outage. (Failed on the old
// code: the note named no cause, and the crawl took > 15 s with 3
// robots.txt requests.)
func TestUntrustedCertLoggedWithCause(t *testing.T) {
	ca, err := tlsutil.NewCA("untrusted-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("secure.test", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request %s served over an untrusted connection", r.URL)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()

	dir := t.TempDir()
	opts := Options{
		DataDir: dir,
		Workers: 2,
		Fetcher: fetcher.Options{
			AllowPrivate: true,
			Resolve:      map[string]string{"secure.test": srv.Listener.Addr().String()},
			FetchTimeout: 3 * time.Second,
		},
		Frontier:         frontier.Options{MaxDelay: 200 * time.Millisecond, FailureBackoff: 10 * time.Millisecond, MaxFailureBackoff: 100 * time.Millisecond},
		DUEFlushInterval: 50 * time.Millisecond,
		MaxPagesPerHost:  1000,
		Filter:           mustFilter(t, "secure.test"),
	}
	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	seeds := []string{"https://secure.test/a", "https://secure.test/b"}
	start := time.Now()
	st := crawlToEnd(t, n, seeds, 2*time.Minute)
	took := time.Since(start)
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	cause := string(appendField(nil, fetcher.ErrCertUnknownAuthority.Error(), 1<<20)) // the log writes spaces as '_'
	logged := map[string]bool{}
	for _, e := range es {
		t.Logf("%s %s %q", e.URL, e.Outcome, e.Note)
		if strings.HasPrefix(e.Note, "robots.txt_unreachable") && strings.Contains(e.Note, cause) {
			logged[e.URL] = true
		}
	}
	for _, s := range seeds {
		if !logged[s] {
			t.Errorf("%s not logged as robots.txt unreachable naming %q", s, cause)
		}
	}
	if st.Fetcher.RobotsFetches != 1 || st.Fetcher.TLSUnknownAuthority != 1 {
		t.Errorf("robots.txt requests %d, unknown-authority failures %d; want 1 and 1",
			st.Fetcher.RobotsFetches, st.Fetcher.TLSUnknownAuthority)
	}
	if took > 5*time.Second {
		t.Errorf("the crawl took %v: the certificate was retried as an outage", took)
	}
}
