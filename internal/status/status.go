// Package status serves a node's live status page: one self-contained HTML
// page (inline JavaScript drawing SVG charts; no external assets) and the
// JSON endpoint it polls. It shows pages/s over time, fetch outcomes,
// frontier and DUE sizes, per-cache hit rates and live miss-ratio curves
// (package mrc: SHARDS, Waldspurger et al., FAST'15) with sizing advice,
// per-peer traffic and spool depth, and the busiest and most-delayed hosts;
// with a Cluster function, the same figures for every node.
//
// # Caller's duties
//
// The caller implements Source (a cheap, concurrency-safe Snapshot of the
// node's counters), optionally Cluster (gathering the peers' Snapshots, e.g.
// over gRPC), and drives the history: either call Run in a goroutine it owns
// (it returns when its context ends) or call Sample periodically. The JSON
// handler also samples when the last sample is older than Interval, so the
// page works without Run.
//
// The Handler never binds a socket. The server that mounts it MUST listen on
// loopback (127.0.0.1 / [::1]) by default and expose the page elsewhere only
// on the operator's explicit request: it is read-only but reveals the crawl.
//
// # Routes (relative to where it is mounted)
//
//	GET /             the HTML page
//	GET /status.json  {"node": Snapshot, "history": [...], "cluster": [...]}
//	                  ("cluster" only with ?cluster=1 and a Cluster function)
//
// Handler is safe for concurrent use.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/internal/mrc"
)

// ErrBadOptions reports unusable Options.
var ErrBadOptions = errors.New("status: bad options")

// Snapshot is one node's figures at one moment. All fields are plain data;
// zero values are shown as absent.
type Snapshot struct {
	Node   string    `json:"node"`
	Time   time.Time `json:"time"`
	Uptime float64   `json:"uptimeSec"`
	// Pages is the total number of pages fetched so far (the page/s chart
	// is its rate of change).
	Pages    uint64            `json:"pages"`
	Bytes    uint64            `json:"bytes"`
	Outcomes map[string]uint64 `json:"outcomes"` // e.g. "2xx", "4xx", "robots", "error"
	Frontier int64             `json:"frontier"` // URLs waiting
	DUE      int64             `json:"due"`      // URLs known to the DUE
	Caches   []Cache           `json:"caches"`
	Peers    []Peer            `json:"peers"`
	Busiest  []Host            `json:"busiestHosts"`
	Delayed  []Host            `json:"delayedHosts"`
	Latency  []Latency         `json:"latency,omitempty"` // latency.go
	// Error is set, in a cluster view, for a node that could not be asked
	// (its other fields are then empty).
	Error string `json:"error,omitempty"`
	// Fenced is "fenced: <why>" while the control plane keeps the node
	// from fetching (issue 25), else empty.
	Fenced string `json:"fenced,omitempty"`
	// Revisit holds continuous crawling's counts ("scheduled", "queued",
	// "changed", "unchanged", "304"); nil when the node does not revisit.
	Revisit map[string]uint64 `json:"revisit,omitempty"`
	// Control is the operator's rules in force on the node (pauses,
	// blocks, overrides) and what they hold back, one line each (issue 28).
	Control []string `json:"control,omitempty"`
}

// Cache is one cache's figures and its live miss-ratio curves.
type Cache struct {
	Name string `json:"name"` // e.g. "due-front", "peer:node2"
	Size int    `json:"size"` // entries per worker (per Unit)
	// Unit is what Size is per: "worker" (default) or e.g. "peer".
	Unit    string  `json:"unit,omitempty"`
	Lookups uint64  `json:"lookups"`
	Hits    uint64  `json:"hits"`
	HitRate float64 `json:"hitRate"` // filled by the handler from Hits/Lookups when 0
	// Curves by algorithm ("lru", "clock", "random"), from mrc.Estimator.
	Curves map[string][]mrc.Point `json:"curves,omitempty"`
	Advice *mrc.Advice            `json:"advice,omitempty"`
	// Note qualifies the curve or the advice for the operator.
	Note string `json:"note,omitempty"`
}

// Peer is the traffic with one other node.
type Peer struct {
	ID        string `json:"id"`
	Up        bool   `json:"up"`
	SentURLs  uint64 `json:"sentUrls"`
	RecvURLs  uint64 `json:"recvUrls"`
	SentBytes uint64 `json:"sentBytes"`
	Spool     int64  `json:"spool"` // URLs spooled while the peer is unreachable
	// The last failure to send to the peer (empty if none): its kind
	// (hostsplit.FailureKind: "refused", "tls", "timeout", ...), its cause
	// and when it happened.
	LastError     string    `json:"lastError,omitempty"`
	LastErrorKind string    `json:"lastErrorKind,omitempty"`
	LastErrorAt   time.Time `json:"lastErrorAt,omitzero"`
}

// Host is one host's figures.
type Host struct {
	Host    string  `json:"host"`
	Fetches uint64  `json:"fetches"`
	Bytes   uint64  `json:"bytes,omitempty"`
	FetchMS float64 `json:"fetchMs,omitempty"` // mean fetch duration
	Queued  int64   `json:"queued"`
	DelayMS float64 `json:"delayMs"` // how long its next fetch waits
	// Failures is the host's consecutive failed fetches (back-off).
	Failures int `json:"failures,omitempty"`
}

// Source gives the node's current Snapshot. Snapshot must be safe for
// concurrent use and cheap (it is called on every poll).
type Source interface{ Snapshot() Snapshot }

// SourceFunc adapts a function to Source.
type SourceFunc func() Snapshot

// Snapshot implements Source.
func (f SourceFunc) Snapshot() Snapshot { return f() }

// Options configure a Handler. Zero fields take the defaults noted.
type Options struct {
	Source Source // required
	// Cluster, if set, returns every node's Snapshot (this node's included
	// or not; the page shows what it gets). It should honour ctx.
	Cluster func(ctx context.Context) []Snapshot
	// History is how many samples the time series keep; default 600.
	History int
	// Interval between samples; default 1s.
	Interval time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Title of the page; default "Sextant".
	Title string
}

// EnsureDefaults fills zero fields.
func (o *Options) EnsureDefaults() {
	if o.History == 0 {
		o.History = 600
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Title == "" {
		o.Title = "Sextant"
	}
}

// Validate reports every bad field.
func (o *Options) Validate() error {
	var errs []string
	if o.Source == nil {
		errs = append(errs, "Source is nil")
	}
	if o.History < 2 {
		errs = append(errs, fmt.Sprintf("History %d < 2", o.History))
	}
	if o.Interval <= 0 {
		errs = append(errs, fmt.Sprintf("Interval %v ≤ 0", o.Interval))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrBadOptions, strings.Join(errs, "; "))
	}
	return nil
}

// Point is one sample of the time series.
type Point struct {
	Time        time.Time `json:"time"`
	Pages       uint64    `json:"pages"`
	PagesPerSec float64   `json:"pagesPerSec"`
	Frontier    int64     `json:"frontier"`
	DUE         int64     `json:"due"`
}

// Handler serves the status page. Safe for concurrent use.
type Handler struct {
	o   Options
	mux *http.ServeMux

	mu   sync.Mutex
	ring []Point // ring buffer of samples
	next int     // where the next sample goes
	n    int     // samples held
}

// New returns a Handler for o (defaults applied to a copy).
func New(o Options) (*Handler, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	h := &Handler{o: o, ring: make([]Point, o.History), mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", h.page)
	h.mux.HandleFunc("GET /status.json", h.json)
	return h, nil
}

// ServeHTTP implements http.Handler. Only GET and HEAD are served.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// Sample takes one Snapshot and appends it to the history.
func (h *Handler) Sample() Snapshot {
	s := h.o.Source.Snapshot()
	now := h.o.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.appendLocked(now, s)
	return s
}

func (h *Handler) appendLocked(now time.Time, s Snapshot) {
	p := Point{Time: now, Pages: s.Pages, Frontier: s.Frontier, DUE: s.DUE}
	if h.n > 0 {
		prev := h.ring[(h.next-1+len(h.ring))%len(h.ring)]
		if dt := now.Sub(prev.Time).Seconds(); dt > 0 && s.Pages >= prev.Pages {
			p.PagesPerSec = float64(s.Pages-prev.Pages) / dt
		}
	}
	h.ring[h.next] = p
	h.next = (h.next + 1) % len(h.ring)
	h.n = min(h.n+1, len(h.ring))
}

// History returns the samples held, oldest first.
func (h *Handler) History() []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.historyLocked()
}

func (h *Handler) historyLocked() []Point {
	out := make([]Point, 0, h.n)
	for i := 0; i < h.n; i++ {
		out = append(out, h.ring[(h.next-h.n+i+len(h.ring))%len(h.ring)])
	}
	return out
}

// Run samples every Interval until ctx ends.
func (h *Handler) Run(ctx context.Context) error {
	t := time.NewTicker(h.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			h.Sample()
		}
	}
}

// Response is the JSON document of /status.json.
type Response struct {
	Node     Snapshot   `json:"node"`
	History  []Point    `json:"history"`
	Cluster  []Snapshot `json:"cluster,omitempty"`
	Interval float64    `json:"intervalSec"`
}

func fill(s *Snapshot) {
	for i := range s.Caches {
		c := &s.Caches[i]
		if c.HitRate == 0 && c.Lookups > 0 {
			c.HitRate = float64(c.Hits) / float64(c.Lookups)
		}
	}
}

func (h *Handler) json(w http.ResponseWriter, r *http.Request) {
	s := h.o.Source.Snapshot()
	now := h.o.Now()
	h.mu.Lock()
	if h.n == 0 || now.Sub(h.ring[(h.next-1+len(h.ring))%len(h.ring)].Time) >= h.o.Interval {
		h.appendLocked(now, s)
	}
	resp := Response{Node: s, History: h.historyLocked(), Interval: h.o.Interval.Seconds()}
	h.mu.Unlock()
	fill(&resp.Node)
	if h.o.Cluster != nil && r.URL.Query().Get("cluster") == "1" {
		resp.Cluster = h.o.Cluster(r.Context())
		for i := range resp.Cluster {
			fill(&resp.Cluster[i])
		}
	}
	b, err := json.Marshal(resp)
	if err != nil { // a value the Source gave is not encodable (NaN, ±Inf)
		http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(append(b, '\n'))
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	fmt.Fprint(w, strings.Replace(pageHTML, "{{TITLE}}", htmlEscape(h.o.Title), 2))
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
