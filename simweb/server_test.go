package simweb

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestRequestLog(t *testing.T) {
	w := newWeb(t, SmallConfig())
	srv := startServer(t, w, Options{})
	c := srv.Client()
	host := w.HostName(0)
	for i := range w.NumHosts() { // a host that serves plain HTTP: :8080 goes to the plain listener
		if w.Scheme(i).Plain {
			host = w.HostName(i)
			break
		}
	}
	for _, pq := range []string{"/robots.txt", "/", "/nope"} {
		resp, err := c.Get("http://" + host + ":8080" + pq)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	log := srv.Log()[host]
	if len(log) != 3 || log[0].Path != "/robots.txt" || log[2].Status != 404 {
		t.Fatalf("log %+v", log)
	}
	for i, r := range log {
		if r.End.Before(r.Start) || (i > 0 && r.Start.Before(log[i-1].End)) {
			t.Errorf("entry %d: %+v", i, r)
		}
	}
	if MaxConcurrent(log) != 1 || MinGap(log) < 0 {
		t.Errorf("sequential requests: concurrency %d, gap %v", MaxConcurrent(log), MinGap(log))
	}
	if st := srv.Requests(); st.Requests != 3 || st.Bytes == 0 {
		t.Errorf("stats %+v", st)
	}
	if _, err := c.Get("http://example.com/"); err == nil || !strings.Contains(err.Error(), "not served") {
		t.Errorf("dial of a foreign host: %v", err)
	}
	if _, err := Start(w, Options{Listen: "0.0.0.0:0"}); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("non-loopback listen: %v", err)
	}
}

// A web of 10⁷ articles costs well under 50 MiB: nothing is stored per page.
func TestMemory10M(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := Config{Seed: 3, Hosts: 100_000, PagesPerHost: 100, MaxPagesPerHost: 2000}
	w := newWeb(t, c)
	if _, err := w.Respond(w.HostName(99_999), "/"); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Everything allocated while building the web and answering a request
	// bounds what the web retains; HeapAlloc is the retained estimate.
	allocated := after.TotalAlloc - before.TotalAlloc
	retained := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d articles on %d hosts: %.1f MiB allocated in all, ≈ %.1f MiB retained", w.Pages(), w.NumHosts(),
		float64(allocated)/(1<<20), float64(retained)/(1<<20))
	if w.Pages() < 9_000_000 {
		t.Fatalf("only %d articles", w.Pages())
	}
	if allocated > 50<<20 {
		t.Fatalf("web of %d pages allocated %d bytes", w.Pages(), allocated)
	}
	runtime.KeepAlive(w)
}

func TestServerCloseAbortsStalls(t *testing.T) {
	defer goleak.VerifyNone(t, serverLeaksOnly()...)
	c := SmallConfig()
	c.StallTime = time.Hour
	w := newWeb(t, c)
	srv, err := Start(w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	host := w.HostName(w.HostsWith(Stall)[0])
	client := srv.Client()
	resp, err := client.Get(w.URL(host, "/stall/0.html"))
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 100)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- srv.Close() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not abort a stalled response")
	}
	resp.Body.Close()
	client.CloseIdleConnections()
}

func FuzzRespond(f *testing.F) {
	f.Add(uint64(1), 3, "/")
	f.Add(uint64(2), 7, "/d1/p5.html?view=print")
	f.Add(uint64(3), 6, "/cal/2026-02/")
	f.Add(uint64(4), 6, "/sess/3?sid=0000000100000000")
	f.Add(uint64(5), 1, "/d0/p00.html")
	f.Fuzz(func(t *testing.T, seed uint64, host int, pq string) {
		c := SmallConfig()
		c.Seed = seed
		w, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		name := w.HostName(((host % 30) + 30) % 30)
		r1, err := w.Respond(name, pq)
		if err != nil {
			t.Fatal(err)
		}
		r2, _ := w.Respond(name, pq)
		if r1.Status != r2.Status || !bytes.Equal(r1.Body, r2.Body) {
			t.Fatal("not deterministic")
		}
	})
}

func TestLogHelpers(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(a, b int) Request {
		return Request{Start: t0.Add(time.Duration(a) * time.Second), End: t0.Add(time.Duration(b) * time.Second)}
	}
	for _, tc := range []struct {
		reqs []Request
		conc int
		gap  time.Duration
	}{
		{nil, 0, 0},
		{[]Request{at(0, 1), at(1, 2), at(4, 5)}, 1, 0},
		{[]Request{at(0, 3), at(1, 2), at(2, 5)}, 2, -2 * time.Second},
		{[]Request{at(0, 10), at(1, 2), at(3, 4), at(3, 5)}, 3, -9 * time.Second},
	} {
		if c, g := MaxConcurrent(tc.reqs), MinGap(tc.reqs); c != tc.conc || g != tc.gap {
			t.Errorf("%v: concurrency %d gap %v, want %d %v", tc.reqs, c, g, tc.conc, tc.gap)
		}
	}
}

// serverLeaksOnly makes goleak check the server's goroutines, not those of
// the test's own HTTP client, which may take a moment to notice closed
// connections on a loaded machine.
func serverLeaksOnly() []goleak.Option {
	return []goleak.Option{goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop")}
}
