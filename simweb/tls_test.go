package simweb

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// hostsBy returns, for SmallConfig, one host of each scheme mode.
func hostsBy(t *testing.T, w *Web) (httpsOnly, redirect, plain, h2, hsts, noH2 int) {
	t.Helper()
	httpsOnly, redirect, plain, h2, hsts, noH2 = -1, -1, -1, -1, -1, -1
	n := map[string]int{}
	for i := range w.NumHosts() {
		s := w.Scheme(i)
		switch {
		case s.HTTPS && !s.Plain:
			httpsOnly, n["https-only"] = i, n["https-only"]+1
		case s.Redirect:
			redirect, n["redirect"] = i, n["redirect"]+1
		case !s.HTTPS && s.Plain:
			plain, n["plain"] = i, n["plain"]+1
		default:
			t.Fatalf("host %d: impossible mode %+v", i, s)
		}
		if s.H2 {
			h2 = i
		} else if s.HTTPS {
			noH2 = i
		}
		if s.HSTS {
			hsts = i
			if s.Plain {
				t.Errorf("host %d sends HSTS but serves plain HTTP", i)
			}
		}
	}
	if httpsOnly < 0 || redirect < 0 || plain < 0 || h2 < 0 || hsts < 0 || noH2 < 0 {
		t.Fatalf("SmallConfig lacks a scheme mode: %v, h2 %d, hsts %d, no h2 %d", n, h2, hsts, noH2)
	}
	if n["https-only"]+n["redirect"] <= w.NumHosts()/2 {
		t.Errorf("most hosts should be HTTPS: %v", n)
	}
	return
}

// Each scheme mode behaves over the wire as a real server configured so
// does: refused ports, the http→https 301, h2 by ALPN, HSTS, a certificate
// only simweb's CA vouches for.
func TestHTTPSModes(t *testing.T) {
	w := newWeb(t, SmallConfig())
	httpsOnly, redirect, plain, h2, hsts, noH2 := hostsBy(t, w)
	srv := startServer(t, w, Options{NoLatency: true})
	c := srv.Client()
	get := func(url string) (*http.Response, error) {
		resp, err := c.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	name := w.HostName
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://" + name(httpsOnly) + "/", false},
		{"https://" + name(plain) + "/", false},
	} {
		if _, err := get(tc.url); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("GET %s: %v, want connection refused", tc.url, err)
		}
	}
	resp, err := get("http://" + name(redirect) + "/d0/?x=1")
	if err != nil || resp.StatusCode != 301 || resp.Header.Get("Location") != "https://"+name(redirect)+"/d0/?x=1" {
		t.Errorf("redirecting host over http: %v %v", resp, err)
	}
	for _, h := range []int{httpsOnly, redirect, plain} {
		resp, err := get(w.URL(name(h), "/"))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", w.URL(name(h), "/"), resp, err)
		}
		if got := resp.Header.Get("Strict-Transport-Security") != ""; got != w.Scheme(h).HSTS {
			t.Errorf("%s: HSTS %v", name(h), got)
		}
	}
	resp, err = get(w.URL(name(hsts), "/robots.txt"))
	if err != nil || resp.Header.Get("Strict-Transport-Security") != hstsValue {
		t.Errorf("HSTS host: %v %v", resp, err)
	}
	for h, proto := range map[int]string{h2: "HTTP/2.0", noH2: "HTTP/1.1"} {
		resp, err := get(w.URL(name(h), "/"))
		if err != nil || resp.Proto != proto || resp.TLS == nil {
			t.Errorf("%s: %v, want %s over TLS", name(h), err, proto)
		}
	}
	log := srv.Log()[name(h2)]
	if len(log) == 0 || !log[len(log)-1].TLS || log[len(log)-1].Proto != "HTTP/2.0" {
		t.Errorf("server log of the h2 host: %+v", log)
	}

	// Only simweb's CA vouches for the certificate, CAPEM is that CA.
	untrusted := &http.Client{Transport: &http.Transport{DialContext: srv.DialContext}}
	if _, err := untrusted.Get(w.URL(name(httpsOnly), "/")); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the CA: %v, want a certificate error", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(srv.CAPEM()) {
		t.Fatal("CAPEM holds no certificate")
	}
	pemClient := &http.Client{Transport: &http.Transport{DialContext: srv.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if resp, err := pemClient.Get(w.URL(name(httpsOnly), "/")); err != nil {
		t.Errorf("a client trusting CAPEM: %v", err)
	} else {
		resp.Body.Close()
	}
	pemClient.CloseIdleConnections()
	untrusted.CloseIdleConnections()
	c.CloseIdleConnections()
}

// The oracle speaks https: TLS hosts' URLs are https, except the http://
// spellings of links to redirecting hosts, each of which leads (301) to
// its https twin, also in the set.
func TestOracleHTTPS(t *testing.T) {
	w := newWeb(t, SmallConfig())
	res, err := w.Oracle(w.Seeds(), Rules{})
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, u := range res.Fetched {
		set[u] = true
	}
	var https, viaRedirect int
	for _, u := range res.Fetched {
		scheme, rest, _ := strings.Cut(u, "://")
		host, _, _ := strings.Cut(rest, "/")
		h, ok := w.HostIndex(host)
		if !ok {
			t.Fatalf("%s: not a host of the web", u)
		}
		s := w.Scheme(h)
		switch {
		case scheme == "https" && s.HTTPS:
			https++
		case scheme == "http" && !s.HTTPS:
		case scheme == "http" && s.Redirect:
			viaRedirect++
			if !set["https://"+rest] {
				t.Errorf("%s redirects to https://%s, not in the set", u, rest)
			}
		default:
			t.Errorf("%s: scheme %s on a host %+v", u, scheme, s)
		}
	}
	if https < len(res.Fetched)/2 || viaRedirect < 10 {
		t.Errorf("%d URLs: %d https, %d http→https redirects", len(res.Fetched), https, viaRedirect)
	}
}

// One port serves both schemes (what a crawler's --resolve DOMAIN=IP:PORT
// needs); a client that connects and says nothing blocks no one, and Close
// does not wait for it. Plain HTTP to an HTTPS-only host gets nginx's 400.
func TestOnePortBothSchemes(t *testing.T) {
	defer goleak.VerifyNone(t, serverLeaksOnly()...)
	w := newWeb(t, SmallConfig())
	httpsOnly, _, plain, _, _, _ := hostsBy(t, w)
	srv, err := Start(w, Options{NoLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	idle, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	direct := func(tc *tls.Config) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, srv.Addr())
			}}}
	}
	c := direct(srv.TLSClientConfig())
	for url, want := range map[string]int{
		"https://" + w.HostName(httpsOnly) + "/": 200,
		"http://" + w.HostName(plain) + "/":      200,
		"http://" + w.HostName(httpsOnly) + "/":  400,
	} {
		resp, err := c.Get(url)
		if err != nil || resp.StatusCode != want {
			t.Errorf("GET %s on %s: %v %v, want %d", url, srv.Addr(), resp, err, want)
			continue
		}
		resp.Body.Close()
	}
	c.CloseIdleConnections()
	done := make(chan error)
	go func() { done <- srv.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for a silent client")
	}
}

// RespondScheme answers as the server does for each scheme.
func TestRespondScheme(t *testing.T) {
	w := newWeb(t, SmallConfig())
	httpsOnly, redirect, plain, _, _, _ := hostsBy(t, w)
	r, err := w.RespondScheme(w.HostName(redirect), "/d0/", false)
	if err != nil || r.Status != 301 || r.Header.Get("Location") != "https://"+w.HostName(redirect)+"/d0/" ||
		len(r.Links) != 1 || r.Links[0].Tag != "location" {
		t.Errorf("plain request to a redirecting host: %v %+v", err, r)
	}
	for h, https := range map[int]bool{httpsOnly: false, plain: true} {
		if _, err := w.RespondScheme(w.HostName(h), "/", https); !errors.Is(err, ErrSchemeNotServed) {
			t.Errorf("%s over https=%v: %v, want ErrSchemeNotServed", w.HostName(h), https, err)
		}
	}
	a, err1 := w.RespondScheme(w.HostName(httpsOnly), "/", true)
	b, err2 := w.Respond(w.HostName(httpsOnly), "/")
	if err1 != nil || err2 != nil || !bytes.Equal(a.Body, b.Body) {
		t.Errorf("Respond is RespondScheme with the host's own scheme: %v %v", err1, err2)
	}
}
