package fetcher

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// The h2 bound counts h2 connections only: HTTP/1.1 ones are bounded by the
// transport (its LRU). Counting both swept every connection whenever the
// two pools together passed MaxIdleConns, so every fetch of a crawl whose
// hosts did not all fit redialled (the 1,000-host HTTPS web: 5,900
// handshakes for 747 hosts). Here 3 HTTP/1.1 hosts and 2 h2 hosts are
// fetched in turn 4 times under a cap of 3: the h2 hosts keep their
// connection and no fetch sweeps. (Failed before: 20 connections, one per
// fetch, and 3 sweeps.)
func TestIdleBoundCountsHTTP2Only(t *testing.T) {
	var dials [5]atomic.Int64
	pool := x509.NewCertPool()
	var urls []string
	for i := range dials {
		s, _ := tlsServer(t, i >= 3, func(s *httptest.Server) {
			s.Config.ConnState = func(c net.Conn, st http.ConnState) {
				if st == http.StateNew {
					dials[i].Add(1)
				}
			}
		}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		pool.AddCert(s.Certificate())
		urls = append(urls, s.URL)
	}
	f := newTest(t, func(o *Options) {
		o.TLSConfig = &tls.Config{RootCAs: pool}
		o.MaxIdleConns = 3
	})
	const rounds = 4
	for range rounds {
		for _, u := range urls {
			mustFetch(t, f, u).Close()
		}
	}
	total := int64(0)
	for i := range dials {
		n := dials[i].Load()
		total += n
		if i >= 3 && n != 1 {
			t.Errorf("h2 host %d: %d connections, want 1", i, n)
		}
	}
	if st := f.Stats(); st.IdleSweeps != 0 || total >= rounds*int64(len(urls)) {
		t.Errorf("%d connections for %d fetches, %d sweeps; want fewer, and no sweep", total, rounds*len(urls), st.IdleSweeps)
	}
	if n := f.dialer.h2open.Load(); n != 2 {
		t.Errorf("%d h2 connections counted, want 2", n)
	}
}
