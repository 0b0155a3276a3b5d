package crawl

import (
	"bytes"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/frontier"
)

// Read-only views of a running node for status pages.

// MostDelayedHosts returns up to k hosts with URLs queued that wait longest
// for their politeness delay or failure back-off (frontier.MostDelayed).
func (n *Node) MostDelayedHosts(k int) []frontier.HostInfo { return n.fr.MostDelayed(k) }

// HostCount is one host's fetches as counted by a HostTally.
type HostCount struct {
	Host    string
	Fetches uint64
	Bytes   uint64
	Time    time.Duration // summed fetch durations
}

// HostTally counts fetches per host from the crawl-log lines written
// through it: put it between a CrawlLog and the log's file
// (NewCrawlLog(NewHostTally(file, 0))) and read Busiest. Lines of URLs not
// fetched (robots.txt disallowed) are not counted. Safe for concurrent use;
// its Write forwards each write unchanged before counting, so the file
// still gets one write per line.
type HostTally struct {
	w        io.Writer
	maxHosts int

	mu    sync.Mutex
	hosts map[string]*HostCount
	part  []byte // a line split across writes (CrawlLog never does)
}

// NewHostTally counts the lines written to w. It tracks at most maxHosts
// hosts (default 1<<16); fetches of further hosts are not counted.
func NewHostTally(w io.Writer, maxHosts int) *HostTally {
	if maxHosts <= 0 {
		maxHosts = 1 << 16
	}
	return &HostTally{w: w, maxHosts: maxHosts, hosts: make(map[string]*HostCount)}
}

// Write implements io.Writer.
func (t *HostTally) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.part = append(t.part, b...)
			break
		}
		line := b[:i]
		if len(t.part) > 0 {
			line = append(t.part, line...)
			t.part = t.part[:0]
		}
		t.count(string(line))
		b = b[i+1:]
	}
	return n, err
}

func (t *HostTally) count(line string) {
	e, err := ParseLogLine(line)
	if err != nil || e.Outcome == OutcomeRobots {
		return
	}
	u, err := url.Parse(e.URL)
	if err != nil || u.Host == "" {
		return
	}
	h := t.hosts[u.Hostname()]
	if h == nil {
		if len(t.hosts) >= t.maxHosts {
			return
		}
		h = &HostCount{Host: u.Hostname()}
		t.hosts[h.Host] = h
	}
	h.Fetches++
	h.Bytes += uint64(max(e.Bytes, 0))
	h.Time += e.Duration
}

// Busiest returns up to k hosts with the most fetches, most first.
func (t *HostTally) Busiest(k int) []HostCount {
	t.mu.Lock()
	out := make([]HostCount, 0, len(t.hosts))
	for _, h := range t.hosts {
		out = append(out, *h)
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Fetches != out[j].Fetches {
			return out[i].Fetches > out[j].Fetches
		}
		return out[i].Host < out[j].Host
	})
	return out[:min(max(k, 0), len(out))]
}

// TalliedLog is a crawl log at a path whose lines a HostTally counts. Give
// Log to Options.CrawlLog and Close it after the node is closed.
type TalliedLog struct {
	Log   *CrawlLog
	Tally *HostTally
	f     *os.File
}

// OpenTalliedLog opens (appending) the crawl log at path behind a HostTally,
// cutting a torn last line first, as OpenCrawlLog does.
func OpenTalliedLog(path string, logger *slog.Logger) (*TalliedLog, error) {
	f, err := openLogAppend(path, logger)
	if err != nil {
		return nil, err
	}
	t := NewHostTally(f, 0)
	return &TalliedLog{Log: NewCrawlLog(t), Tally: t, f: f}, nil
}

// Close closes the log's file.
func (l *TalliedLog) Close() error { return l.f.Close() }

// Count is host's fetches so far.
func (t *HostTally) Count(host string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.hosts[host]; h != nil {
		return h.Fetches
	}
	return 0
}

// CacheSizes reports how the node's front caches are sized: workers,
// entries per worker, and whether one cache of perWorker × workers entries
// is shared by the workers (Options.CacheShared).
func (n *Node) CacheSizes() (workers, perWorker int, shared bool) {
	return n.opts.Workers, n.opts.CachePerWorker, n.opts.CacheShared
}
