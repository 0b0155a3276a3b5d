package main

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/logging"
)

// A node's progress line carries fetched, queued, pages/s and peers, comes
// every interval, and stops at Close.
func TestProgressLog(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	l := logging.Lines(func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }, slog.LevelInfo)
	var fetched atomic.Uint64
	node := func() crawl.Stats {
		return crawl.Stats{Fetches: fetched.Add(10), Frontier: frontier.Stats{Queued: 7}}
	}
	split := func() hostsplit.Stats {
		return hostsplit.Stats{Self: "a", Peers: []hostsplit.PeerStats{{Peer: "a"}, {Peer: "b", Failing: true}, {Peer: "c"}}}
	}
	p := startProgressLog(l, 5*time.Millisecond, node, split)
	for {
		mu.Lock()
		n := len(lines)
		mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	p.Close()
	p.Close()
	mu.Lock()
	n := len(lines)
	got := lines[1]
	mu.Unlock()
	for _, want := range []string{"msg=progress", "fetched=20", "queued=7", "pages_per_s=", "peers=2", "peers_failing=1"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress line lacks %q: %s", want, got)
		}
	}
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != n {
		t.Errorf("%d lines logged after Close", len(lines)-n)
	}
	if off := startProgressLog(l, 0, node, split); off == nil {
		t.Error("interval 0: nil")
	} else {
		off.Close()
	}
}
