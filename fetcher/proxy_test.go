package fetcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tinyproxy runs Debian's tinyproxy in the foreground on a free loopback
// port until the test ends. It refuses (403) requests for the domain
// blocked.example by its filter, without connecting anywhere. It returns
// the proxy URL and a function returning its log so far.
func tinyproxy(t *testing.T) (*url.URL, func() string) {
	t.Helper()
	const bin = "/usr/bin/tinyproxy" // Debian's; .ci/run installs it
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("this test needs Debian's tinyproxy at %s (apt-get install tinyproxy): %v", bin, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	logPath, filter := filepath.Join(dir, "tinyproxy.log"), filepath.Join(dir, "filter")
	if err := os.WriteFile(filter, []byte("blocked\\.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("Port %s\nListen 127.0.0.1\nTimeout 30\nMaxClients 20\nAllow 127.0.0.1\n"+
		"LogLevel Info\nLogFile %q\nFilter %q\n", port, logPath, filter)
	confPath := filepath.Join(dir, "tinyproxy.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-d", "-c", confPath)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	readLog := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("tinyproxy exited: %s\n%s", out.String(), readLog())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("tinyproxy not listening on %s: %v\n%s", addr, err, readLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &url.URL{Scheme: "http", Host: addr}, readLog
}

// Requests go through a real proxy: plain http as an absolute-URI request,
// https by CONNECT (with h2 inside the tunnel when the target offers it).
// The private-address guard judges the target, not the proxy: without
// AllowPrivate a loopback or private target is refused before anything is
// sent, while the loopback proxy itself is used.
func TestProxyTinyproxy(t *testing.T) {
	proxy, proxyLog := tinyproxy(t)
	var hits atomic.Int64
	plain := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "plain "+r.URL.Path)
	})
	secure, pool := tlsServer(t, true, nil, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "secure "+r.URL.Path)
	})
	plainHost := strings.TrimPrefix(plain.URL, "http://")
	secureHost := strings.TrimPrefix(secure.URL, "https://")

	t.Run("AllowPrivate", func(t *testing.T) {
		f := newTest(t, func(o *Options) {
			trusting(pool)(o)
			o.Proxy = ProxyURL(proxy)
		})
		r := mustFetch(t, f, plain.URL+"/a")
		if got := readAll(t, r.Body); got != "plain /a" || !r.Proxied || r.Proto != "HTTP/1.1" {
			t.Fatalf("http through proxy: %q proxied %v proto %s", got, r.Proxied, r.Proto)
		}
		r = mustFetch(t, f, secure.URL+"/b")
		if got := readAll(t, r.Body); got != "secure /b" || !r.Proxied || r.Proto != "HTTP/2.0" {
			t.Fatalf("https through proxy: %q proxied %v proto %s", got, r.Proxied, r.Proto)
		}
		log := proxyLog()
		for _, want := range []string{"GET http://" + plainHost + "/a", "CONNECT " + secureHost} {
			if !strings.Contains(log, want) {
				t.Errorf("tinyproxy's log lacks %q:\n%s", want, log)
			}
		}
		// robots.txt goes through the proxy too.
		robots, _, _, err := f.Robots(context.Background(), "http", plainHost)
		if err != nil || robots.Outcome != RobotsParsed {
			t.Errorf("robots through proxy: %v %v", err, robots.Outcome)
		}
	})

	t.Run("target guarded", func(t *testing.T) {
		before, logBefore := hits.Load(), len(proxyLog())
		f := newTest(t, func(o *Options) {
			trusting(pool)(o)
			o.AllowPrivate = false
			o.Proxy = ProxyURL(proxy)
			o.Resolver = func(ctx context.Context, host string) ([]netip.Addr, error) {
				switch host {
				case "blocked.example": // public as far as the guard knows
					return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
				case "inside.example":
					return []netip.Addr{netip.MustParseAddr("203.0.113.8"), netip.MustParseAddr("10.1.2.3")}, nil
				}
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
		})
		for _, u := range []string{plain.URL + "/c", secure.URL + "/d", "http://inside.example/e", "https://localhost:" + strings.Split(secureHost, ":")[1] + "/f"} {
			_, err := f.Fetch(context.Background(), u)
			if !errors.Is(err, ErrPrivateAddress) {
				t.Errorf("%s through the proxy without AllowPrivate: err %v, want ErrPrivateAddress", u, err)
			}
		}
		if n := hits.Load() - before; n != 0 {
			t.Errorf("%d refused requests reached their target", n)
		}
		if log := proxyLog()[logBefore:]; strings.Contains(log, "Request") {
			t.Errorf("a refused request reached the proxy:\n%s", log)
		}
		// The proxy on loopback is the operator's: it is used (and
		// answers 403 for the domain its filter refuses).
		r := mustFetch(t, f, "http://blocked.example/g")
		if r.Status != http.StatusForbidden || !r.Proxied {
			t.Fatalf("blocked.example through the proxy: status %d proxied %v", r.Status, r.Proxied)
		}
		if r.RemoteIP != netip.MustParseAddr("203.0.113.7") {
			t.Errorf("RemoteIP %v, want the target's address", r.RemoteIP)
		}
		if log := proxyLog(); !strings.Contains(log, "GET http://blocked.example/g") {
			t.Errorf("tinyproxy's log lacks the request:\n%s", log)
		}
		// A host in Options.Resolve is reached directly, not by the proxy.
		g := newTest(t, func(o *Options) {
			o.Proxy = ProxyURL(proxy)
			o.Resolve = map[string]string{"mirror.test": plainHost}
		})
		if r := mustFetch(t, g, "http://mirror.test/h"); r.Proxied || readAll(t, r.Body) != "plain /h" {
			t.Errorf("Resolve host: proxied %v", r.Proxied)
		}
		if log := proxyLog(); strings.Contains(log, "mirror.test") {
			t.Errorf("a Resolve host went to the proxy:\n%s", log)
		}
	})
}

// --proxy env follows HTTPS_PROXY, HTTP_PROXY and NO_PROXY; none and URLs
// parse; anything else is refused.
func TestParseProxy(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://secure-proxy.example:3128")
	t.Setenv("HTTP_PROXY", "http://plain-proxy.example:8080")
	t.Setenv("NO_PROXY", "direct.example")
	for _, v := range []string{"https_proxy", "http_proxy", "no_proxy", "REQUEST_METHOD"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	env, err := ParseProxy("env")
	if err != nil || env == nil {
		t.Fatalf("env: %v", err)
	}
	for target, want := range map[string]string{
		"https://site.example/":   "http://secure-proxy.example:3128",
		"http://site.example/":    "http://plain-proxy.example:8080",
		"https://direct.example/": "",
		"http://a.direct.example": "",
		"http://127.0.0.1:8080/":  "",
	} {
		u, _ := url.Parse(target)
		p, err := env(u)
		got := ""
		if p != nil {
			got = p.String()
		}
		if err != nil || got != want {
			t.Errorf("env proxy for %s: %q %v, want %q", target, got, err, want)
		}
	}
	if p, err := ParseProxy("none"); p != nil || err != nil {
		t.Errorf("none: %v %v", p != nil, err)
	}
	fixed, err := ParseProxy("http://127.0.0.1:3128")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://site.example/")
	if p, _ := fixed(u); p == nil || p.Host != "127.0.0.1:3128" {
		t.Errorf("fixed proxy: %v", p)
	}
	for _, bad := range []string{"ftp://proxy:21", "socks5://proxy:1080", "proxy.example:3128", "http://", "http://p.example/path", "envv"} {
		if _, err := ParseProxy(bad); !errors.Is(err, ErrProxy) {
			t.Errorf("ParseProxy(%q): %v, want ErrProxy", bad, err)
		}
	}
}
