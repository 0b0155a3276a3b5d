package realweb_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/realweb"
)

// The server behaviours Reachable's NginxStatic flavour models, and the
// TLS set-up the crawl test relies on, checked against nginx itself: h2
// negotiated by ALPN with a client that offers it (on [::1] and
// 127.0.0.1), the certificate valid for every host, a directory redirect
// relative and keeping the query, "file/" a 404, simweb's Content-Types,
// an unknown host 421, and every request in the access log.
func TestNginxServes(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a.test/index.html", "a.test/d/index.html", "a.test/p.xhtml", "b.test/index.html"} {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("<a href=x>x</a>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := realweb.StartNginxT(t, realweb.NginxOptions{Root: root})
	if len(n.Hosts) != 2 {
		t.Fatalf("hosts %v", n.Hosts)
	}
	client := func(addr string, h2 bool) *http.Client {
		var d net.Dialer
		tr := &http.Transport{
			DialContext:       func(ctx context.Context, nw, _ string) (net.Conn, error) { return d.DialContext(ctx, nw, addr) },
			TLSClientConfig:   &tls.Config{RootCAs: n.RootCAs},
			ForceAttemptHTTP2: h2,
		}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	for _, tc := range []struct {
		c                   *http.Client
		url, proto          string
		status              int
		location, ctypePref string
	}{
		{client(n.HTTPS6.String(), true), "https://a.test/", "HTTP/2.0", 200, "", "text/html"},
		{client(n.HTTPS.String(), true), "https://b.test/", "HTTP/2.0", 200, "", "text/html"},
		{client(n.HTTPS.String(), false), "https://a.test/d?q=1", "HTTP/1.1", 301, "/d/?q=1", ""},
		{client(n.HTTP6.String(), false), "http://a.test/index.html/", "HTTP/1.1", 404, "", ""},
		{client(n.HTTP.String(), false), "http://a.test/p.xhtml", "HTTP/1.1", 200, "", "application/xhtml+xml"},
		{client(n.HTTP.String(), false), "http://c.test/", "HTTP/1.1", 421, "", ""},
	} {
		resp, err := tc.c.Get(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ct := resp.Header.Get("Content-Type")
		if resp.Proto != tc.proto || resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.location ||
			len(ct) < len(tc.ctypePref) || ct[:len(tc.ctypePref)] != tc.ctypePref {
			t.Errorf("%s: %s %d Location %q Content-Type %q; want %s %d %q %q…", tc.url, resp.Proto, resp.StatusCode,
				resp.Header.Get("Location"), ct, tc.proto, tc.status, tc.location, tc.ctypePref)
		}
	}
	reqs, err := n.Settled(6, 50*time.Millisecond)
	if err != nil || len(reqs) != 6 {
		t.Fatalf("access log: %d requests, %v; want 6", len(reqs), err)
	}
	if r := reqs[0]; r.Protocol != "HTTP/2.0" || r.Scheme != "https" || r.Host != "a.test" || r.URI != "/" || r.Status != 200 {
		t.Errorf("first request logged as %+v", r)
	}
}
