package status

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/histogram"
	"github.com/sextant-crawler/sextant/internal/mrc"
)

type fakeSource struct {
	mu sync.Mutex
	s  Snapshot
}

func (f *fakeSource) Snapshot() Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s
}

func (f *fakeSource) set(fn func(*Snapshot)) {
	f.mu.Lock()
	fn(&f.s)
	f.mu.Unlock()
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func newTest(t *testing.T, cluster func(context.Context) []Snapshot) (*fakeSource, *fakeClock, *Handler, *httptest.Server) {
	src := &fakeSource{s: Snapshot{Node: "node1", Outcomes: map[string]uint64{"2xx": 1}}}
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h, err := New(Options{Source: src, Cluster: cluster, Now: clk.now, History: 5, Title: "Test <node>"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return src, clk, h, srv
}

func TestPage(t *testing.T) {
	_, _, _, srv := newTest(t, nil)
	resp, body := get(t, srv, "/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	page := string(body)
	for _, want := range []string{"<svg", "status.json", "Test &lt;node&gt;", "rateChart", "outcomes", "caches", "peers", "delayed"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{`src="http`, `href="http`, "<link", "@import", "cdn"} {
		if strings.Contains(page, bad) {
			t.Errorf("page refers to an external asset: %q", bad)
		}
	}
	resp, _ = get(t, srv, "/nothing")
	if resp.StatusCode != 404 {
		t.Errorf("GET /nothing: %d", resp.StatusCode)
	}
	r, err := srv.Client().Post(srv.URL+"/status.json", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", r.StatusCode)
	}
}

func TestJSONFollowsSource(t *testing.T) {
	src, clk, h, srv := newTest(t, nil)
	curve := []mrc.Point{{K: 1, MissRatio: 0.9}, {K: 2, MissRatio: 0.5}, {K: 4, MissRatio: 0.2}}
	adv := mrc.MakeAdvice(curve, 1, 2, 100)
	var last Response
	for i := 1; i <= 8; i++ {
		src.set(func(s *Snapshot) {
			s.Pages = uint64(10 * i * i)
			s.Frontier = int64(100 - i)
			s.DUE = int64(1000 * i)
			s.Outcomes = map[string]uint64{"2xx": uint64(i), "4xx": 1}
			s.Caches = []Cache{{Name: "due-front", Size: 1, Lookups: uint64(10 * i), Hits: uint64(5 * i),
				Curves: map[string][]mrc.Point{mrc.LRU: curve}, Advice: &adv}}
			s.Peers = []Peer{{ID: "node2", Up: true, SentURLs: uint64(i), Spool: int64(i)}}
			s.Busiest = []Host{{Host: "h1.sim.test", Fetches: uint64(i)}}
		})
		clk.t = clk.t.Add(2 * time.Second)
		resp, body := get(t, srv, "/status.json")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("status.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var r Response
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if r.Node.Pages != uint64(10*i*i) || r.Node.DUE != int64(1000*i) || r.Node.Outcomes["2xx"] != uint64(i) {
			t.Errorf("poll %d: node %+v", i, r.Node)
		}
		if len(r.Node.Caches) != 1 || r.Node.Caches[0].HitRate != 0.5 || len(r.Node.Caches[0].Curves[mrc.LRU]) != 3 ||
			r.Node.Caches[0].Advice == nil || r.Node.Caches[0].Advice.KneeK != 2 {
			t.Errorf("poll %d: caches %+v", i, r.Node.Caches)
		}
		if want := min(i, 5); len(r.History) != want {
			t.Errorf("poll %d: %d history points, want %d", i, len(r.History), want)
		}
		if i > 1 {
			// pages went from 10(i-1)² to 10i² in 2 s
			want := float64(10*i*i-10*(i-1)*(i-1)) / 2
			if got := r.History[len(r.History)-1].PagesPerSec; got != want {
				t.Errorf("poll %d: pages/s %g, want %g", i, got, want)
			}
		}
		if r.Cluster != nil {
			t.Error("cluster without a Cluster function")
		}
		last = r
	}
	// the ring keeps the newest samples, oldest first
	for j := 1; j < len(last.History); j++ {
		if !last.History[j].Time.After(last.History[j-1].Time) {
			t.Fatalf("history out of order: %v", last.History)
		}
	}
	if last.History[len(last.History)-1].Pages != 640 {
		t.Errorf("newest sample %+v", last.History[len(last.History)-1])
	}
	// a poll within Interval does not add a sample
	n := len(h.History())
	get(t, srv, "/status.json")
	if len(h.History()) != n {
		t.Error("sampled again within Interval")
	}
}

func TestCluster(t *testing.T) {
	cluster := func(ctx context.Context) []Snapshot {
		return []Snapshot{{Node: "node1", Pages: 5}, {Node: "node2", Pages: 7, Peers: []Peer{{ID: "node1", Up: true}}}}
	}
	_, _, _, srv := newTest(t, cluster)
	_, body := get(t, srv, "/status.json?cluster=1")
	var r Response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Cluster) != 2 || r.Cluster[1].Node != "node2" || r.Cluster[1].Pages != 7 {
		t.Errorf("cluster %+v", r.Cluster)
	}
	_, body = get(t, srv, "/status.json")
	r = Response{}
	json.Unmarshal(body, &r)
	if r.Cluster != nil {
		t.Error("cluster without ?cluster=1")
	}
}

func TestRunAndOptions(t *testing.T) {
	if _, err := New(Options{}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("New without Source: %v", err)
	}
	if _, err := New(Options{Source: SourceFunc(func() Snapshot { return Snapshot{} }), History: 1}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("History 1: %v", err)
	}
	pages := uint64(0)
	var mu sync.Mutex
	h, err := New(Options{Source: SourceFunc(func() Snapshot {
		mu.Lock()
		defer mu.Unlock()
		pages++
		return Snapshot{Pages: pages}
	}), Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Run(ctx) }()
	for len(h.History()) < 3 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
}

// LatencyOf summarises a histogram in milliseconds, and an empty one
// without NaN (which JSON cannot carry).
func TestLatencyOf(t *testing.T) {
	h := histogram.New(0.1, 0.2, 0.4)
	if l := LatencyOf("dns", h.Snapshot()); l != (Latency{Name: "dns"}) {
		t.Errorf("empty: %+v", l)
	} else if _, err := json.Marshal(l); err != nil {
		t.Error(err)
	}
	for range 4 {
		h.Observe(150 * time.Millisecond)
	}
	l := LatencyOf("ttfb", h.Snapshot())
	if l.Count != 4 || math.Abs(l.MeanMS-150) > 1e-6 || math.Abs(l.P50MS-150) > 1e-6 || math.Abs(l.P99MS-199) > 1e-6 {
		t.Errorf("got %+v; want count 4, mean 150, p50 150, p99 199", l)
	}
}
