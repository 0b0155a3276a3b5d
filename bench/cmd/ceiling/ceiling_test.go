package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestOneConnectionPerHost: the ceiling keeps one connection per host for
// the whole run, however many hosts its round-robin order visits between
// two fetches of one host. With the idle pool bounded at 4 × workers, a
// web of more hosts than that lost each host's connection before its next
// turn: a new dial (over TLS, a full handshake) for nearly every fetch.
func TestOneConnectionPerHost(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body><a href=\"/x\">%s</a></body></html>", r.Host)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	const hosts, pages, workers = 40, 3, 2 // 40 hosts > 4 × 2 idle connections
	var b strings.Builder
	for h := range hosts {
		for p := range pages {
			fmt.Fprintf(&b, "http://h%02d.sim.test/p%d.html\n", h, p)
		}
	}
	dir := t.TempDir()
	urls, log := filepath.Join(dir, "urls.txt"), filepath.Join(dir, "fetch.log")
	if err := os.WriteFile(urls, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(urls, srv.Listener.Addr().String(), log, "test", workers, nil); err != nil {
		t.Fatal(err)
	}
	lb, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(lb), "200 http://"); n != hosts*pages {
		t.Errorf("%d fetches answered 200, want %d", n, hosts*pages)
	}
	if got := conns.Load(); got != hosts {
		t.Errorf("%d connections for %d hosts × %d pages, want one per host", got, hosts, pages)
	}
}
