package main

import (
	"log/slog"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
)

// progressLogger logs one line every interval with a node's fetches, queue
// and peers, so that an operator reading a node's log between its start
// and its end sees that (and how fast) it crawls. It owns one goroutine,
// which Close stops and waits for.
type progressLogger struct {
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// startProgressLog starts logging node's and split's stats every interval;
// interval ≤ 0 logs nothing. split may be nil (a node alone).
func startProgressLog(l *slog.Logger, every time.Duration, node func() crawl.Stats, split func() hostsplit.Stats) *progressLogger {
	p := &progressLogger{stop: make(chan struct{})}
	if every <= 0 {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		var last uint64
		lastAt := time.Now()
		for {
			select {
			case <-p.stop:
				return
			case now := <-t.C:
				st := node()
				rate := float64(st.Fetches-last) / now.Sub(lastAt).Seconds()
				last, lastAt = st.Fetches, now
				args := []any{"fetched", st.Fetches, "queued", st.Frontier.Queued, "in_flight", st.Frontier.InFlight,
					"pages_per_s", roundTo(rate, 1), "bytes", st.Bytes}
				if split != nil {
					sp := split()
					failing := 0
					for _, ps := range sp.Peers {
						if ps.Failing {
							failing++
						}
					}
					args = append(args, "peers", sp.NumPeers(), "peers_failing", failing, "spooled_urls", sp.Total.SpoolURLs)
				}
				if st.Fenced != "" {
					args = append(args, "fenced", st.Fenced)
				}
				l.Info("progress", args...)
			}
		}
	}()
	return p
}

// Close stops the goroutine and waits for it. It may be called twice.
func (p *progressLogger) Close() {
	p.once.Do(func() { close(p.stop) })
	p.wg.Wait()
}

func roundTo(x float64, digits int) float64 {
	m := 1.0
	for range digits {
		m *= 10
	}
	return float64(int64(x*m+0.5)) / m
}
