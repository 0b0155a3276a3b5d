// Package control is the operator's control of a running node (issue 28):
// seeds injected at run time, pauses, blocks and per-host politeness
// overrides (the frontier's host rules), drain and status. A Controller
// holds a node's rules, persists them in its data dir (so a restart keeps
// them), logs every change with the operator's name and serves the Control
// gRPC service (server.go) to operator certificates only; client.go is the
// other end, behind `crawler ctl`.
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/logging"
)

// Errors.
var (
	// ErrInvalidChange: a change names no host where it needs one, an
	// unknown action, or an override with nothing to set.
	ErrInvalidChange = errors.New("control: invalid change")
	// ErrNotAttached: the node is still starting.
	ErrNotAttached = errors.New("control: the node is starting")
	// ErrTerminated: the cluster's crawl has ended; seeds would not be
	// fetched.
	ErrTerminated = errors.New("control: the cluster's crawl has terminated")
)

// RulesFile is the rules' file in the node's data dir.
const RulesFile = "control-rules.json"

// pauseSettleBound bounds how long a pause waits for the matching hosts'
// fetches in flight to end.
const pauseSettleBound = 2 * time.Minute

// heldEvery is how long Held counts (a scan of the frontier) are reused.
const heldEvery = 2 * time.Second

// Node is what a Controller steers: *crawl.Node.
type Node interface {
	Seed(ctx context.Context, urls []string) error
	SetHostRules(frontier.HostRules) error
	HostRules() frontier.HostRules
	HeldByRules() (paused, blocked int64, err error)
	ParkedInFlight() int
	Stats() crawl.Stats
}

// Options configures a Controller.
type Options struct {
	ID     string       // the node's id, for status
	Logger *slog.Logger // nil: discard
	// Drain starts the node's graceful stop (as SIGTERM does); nil: none.
	Drain func()
	// Terminated reports whether the cluster's crawl has ended (nil:
	// never).
	Terminated func() bool
}

// Metrics are the Controller's figures, a plain struct (Prometheus wiring
// is cmd/crawler's).
type Metrics struct {
	Changes      uint64 // rule changes applied since start
	Seeded       uint64 // URLs injected through Seed
	SeedRejected uint64 // URLs Seed refused
	PauseRules   int    // pauses in force (a whole-crawl pause counts 1)
	BlockRules   int
	Overrides    int
	PausedAll    bool
	// HeldPaused and HeldBlocked count stored URLs of paused and blocked
	// hosts (queued, not fetched), at most heldEvery old.
	HeldPaused, HeldBlocked int64
	Draining                bool
}

// Controller holds one node's rules. Safe for concurrent use.
type Controller struct {
	opts Options
	mu   sync.Mutex
	node Node
	dir  string
	m    Metrics
	// m.Held* are a scan of the frontier: counted at most every heldEvery
	// and 10 × the last scan's duration, one scan at a time.
	held     time.Time
	heldCost time.Duration
	counting bool
}

// New returns a Controller not yet attached to its node (its service can
// be registered before the node exists).
func New(o Options) *Controller {
	if o.Drain == nil {
		o.Drain = func() {}
	}
	o.Logger = logging.OrDiscard(o.Logger)
	return &Controller{opts: o}
}

// Attach gives the Controller its node and loads the rules persisted in
// dataDir into it: call it before the node fetches.
func (c *Controller) Attach(n Node, dataDir string) error {
	r, err := loadRules(filepath.Join(dataDir, RulesFile))
	if err != nil {
		return err
	}
	if err := n.SetHostRules(r); err != nil {
		return fmt.Errorf("control: rules of %s: %w", dataDir, err)
	}
	if len(r.Paused)+len(r.Blocked)+len(r.Overrides) > 0 {
		c.opts.Logger.Info("control: rules restored", "paused", len(r.Paused), "blocked", len(r.Blocked), "overrides", len(r.Overrides))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.node, c.dir = n, dataDir
	c.countRules(r)
	return nil
}

func (c *Controller) attached() (Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.node == nil {
		return nil, ErrNotAttached
	}
	return c.node, nil
}

// Seed injects urls (checked like a seed file's lines) at the node, which
// routes each to its owner. It returns the problems of those refused.
func (c *Controller) Seed(ctx context.Context, who string, urls []string) (accepted int, problems []crawl.SeedProblem, err error) {
	n, err := c.attached()
	if err != nil {
		return 0, nil, err
	}
	if c.opts.Terminated != nil && c.opts.Terminated() {
		return 0, nil, ErrTerminated
	}
	var sl crawl.SeedList
	for i, u := range urls {
		sl.Add(fmt.Sprintf("urls[%d]", i), u)
	}
	if len(sl.URLs) > 0 {
		if err := n.Seed(ctx, sl.URLs); err != nil {
			return 0, sl.Examples, fmt.Errorf("control: seed: %w", err)
		}
	}
	c.mu.Lock()
	c.m.Seeded += uint64(len(sl.URLs))
	c.m.SeedRejected += uint64(sl.Rejected)
	c.mu.Unlock()
	c.opts.Logger.Info("control: seeds injected", "who", who, "accepted", len(sl.URLs), "rejected", sl.Rejected)
	return len(sl.URLs), sl.Examples, nil
}

// Change applies ch for operator who: persisted first, then in force. A
// pause returns once no matching host has a fetch in flight.
func (c *Controller) Change(ctx context.Context, who string, ch Change) error {
	n, err := c.attached()
	if err != nil {
		return err
	}
	c.mu.Lock()
	r, err := ch.Apply(n.HostRules())
	if err == nil {
		err = saveRules(filepath.Join(c.dir, RulesFile), r)
	}
	if err == nil {
		err = n.SetHostRules(r)
	}
	if err == nil {
		c.m.Changes++
		c.countRules(r)
		c.held = time.Time{}
	}
	c.mu.Unlock()
	if err != nil {
		c.opts.Logger.Warn("control: change refused", "who", who, "change", ch.String(), "err", err)
		return err
	}
	c.opts.Logger.Info("control: change", "who", who, "change", ch.String())
	if ch.Action == ActPause || ch.Action == ActBlock {
		return c.settle(ctx, n)
	}
	return nil
}

// settle waits until no paused or blocked host has a fetch in flight.
func (c *Controller) settle(ctx context.Context, n Node) error {
	ctx, cancel := context.WithTimeout(ctx, pauseSettleBound)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for n.ParkedInFlight() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("control: waiting for fetches in flight of parked hosts: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// Drain starts the node's graceful stop.
func (c *Controller) Drain(who string) {
	c.mu.Lock()
	already := c.m.Draining
	c.m.Draining = true
	c.mu.Unlock()
	c.opts.Logger.Info("control: drain", "who", who, "again", already)
	if !already {
		c.opts.Drain()
	}
}

func (c *Controller) countRules(r frontier.HostRules) {
	c.m.PauseRules, c.m.BlockRules, c.m.Overrides = len(r.Paused), len(r.Blocked), len(r.Overrides)
	c.m.PausedAll = r.PausedAll()
}

// Metrics returns the Controller's figures (counting held URLs again if
// the last count is stale).
func (c *Controller) Metrics() Metrics {
	c.mu.Lock()
	n := c.node
	stale := n != nil && !c.counting && time.Since(c.held) > max(heldEvery, 10*c.heldCost)
	c.counting = c.counting || stale
	c.mu.Unlock()
	if stale {
		start := time.Now()
		p, b, err := n.HeldByRules()
		c.mu.Lock()
		c.counting = false
		if err == nil {
			c.m.HeldPaused, c.m.HeldBlocked, c.held, c.heldCost = p, b, time.Now(), time.Since(start)
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m
}

// Status is a node's summary for `crawler ctl status` and the status page.
type Status struct {
	Node     string             `json:"node"`
	Fetched  uint64             `json:"fetched"`
	Queued   int64              `json:"queued"`
	InFlight int64              `json:"inFlight"`
	Rules    frontier.HostRules `json:"rules"`
	Metrics  Metrics            `json:"metrics"`
}

// Status returns the node's summary.
func (c *Controller) Status() (Status, error) {
	n, err := c.attached()
	if err != nil {
		return Status{Node: c.opts.ID}, err
	}
	st := n.Stats()
	return Status{Node: c.opts.ID, Fetched: st.Fetches, Queued: st.Frontier.Queued, InFlight: int64(st.Frontier.InFlight),
		Rules: n.HostRules(), Metrics: c.Metrics()}, nil
}

// loadRules reads a rules file; a missing file is no rules.
func loadRules(path string) (frontier.HostRules, error) {
	var r frontier.HostRules
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("control: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("control: %s: %w", path, err)
	}
	return r, r.Validate()
}

// saveRules writes r to path atomically and durably.
func saveRules(path string, r frontier.HostRules) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("control: saving rules: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
