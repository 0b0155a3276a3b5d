package crawl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	engine "github.com/sextant-crawler/sextant/internal/crawl"
)

// Sentinel errors. An error of Open, Seed or Run wraps one of them or
// reports a failure of the data directory.
var (
	// ErrInvalidOptions: Open's options are invalid (the error says which).
	ErrInvalidOptions = engine.ErrInvalidOptions
	// ErrClosed: the crawler was closed.
	ErrClosed = engine.ErrClosed
)

// Options configure a Crawler. Zero fields take DefaultOptions' values.
type Options struct {
	// DataDir holds the crawl's state (frontier, URL-seen store, crawl
	// log). Required.
	DataDir string
	// ID names the node in its crawl log.
	ID string
	// Workers is the number of fetching goroutines (at most 4096).
	Workers int
	// UserAgent is sent with every request; its first product token is
	// the name matched in robots.txt. Keep a contact URL in it.
	UserAgent string
	// MinDelay and MaxDelay clamp the wait between two requests to one
	// host, which is Factor times the duration of the host's last fetch
	// (Mercator's rule); a robots.txt Crawl-delay may exceed MaxDelay.
	// A negative MinDelay is none (for test servers: the default keeps a
	// second between two requests to a host).
	MinDelay, MaxDelay time.Duration
	Factor             float64
	// FailureBackoff is the wait after a host's first failure (a refused
	// connection, a timeout, robots.txt unreachable), doubling with each
	// consecutive one.
	FailureBackoff time.Duration
	// FetchTimeout bounds one fetch, body included.
	FetchTimeout time.Duration
	// MaxPagesPerHost bounds the URLs admitted per host (the defence
	// against crawler traps); -1: no bound.
	MaxPagesPerHost int
	// MaxDepth drops links more than this many hops from a seed; 0: no
	// limit.
	MaxDepth int
	// Domains, if set, are the only domains crawled (with their
	// sub-domains); by default every host is. Exclude are domains never
	// crawled (with their sub-domains), even within Domains.
	Domains, Exclude []string
	// AllowPrivate lets the crawler connect to loopback, private and
	// link-local addresses (refused by default: a public page must not
	// make the crawler reach into its own network).
	AllowPrivate bool
	// DialContext and TLSConfig, if set, replace the fetcher's dialer and
	// its TLS client configuration (e.g. to reach a test server).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	TLSConfig   *tls.Config
	// OnFetch, if set, is called with every completed fetch (robots.txt
	// excepted), from many workers at once.
	OnFetch func(Page)
	// Logger receives rare events; nil discards them.
	Logger *slog.Logger
}

// DefaultOptions are the options of a node that nothing configured: the
// same defaults as the crawler command's flags and node config file.
func DefaultOptions() Options {
	d := engine.DefaultOptions()
	return Options{
		ID: d.ID, Workers: d.Workers, UserAgent: d.Fetcher.UserAgent,
		MinDelay: d.Frontier.MinDelay, MaxDelay: d.Frontier.MaxDelay, Factor: d.Frontier.Factor,
		FailureBackoff: d.Frontier.FailureBackoff,
		FetchTimeout:   d.Fetcher.FetchTimeout, MaxPagesPerHost: d.MaxPagesPerHost, MaxDepth: d.MaxDepth,
	}
}

// EnsureDefaults fills zero fields with DefaultOptions' values.
func (o *Options) EnsureDefaults() {
	d := DefaultOptions()
	if o.MinDelay == 0 {
		o.MinDelay = d.MinDelay
	}
	if o.ID == "" {
		o.ID = d.ID
	}
	if o.Workers == 0 {
		o.Workers = d.Workers
	}
	if o.UserAgent == "" {
		o.UserAgent = d.UserAgent
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = d.MaxDelay
	}
	if o.Factor == 0 {
		o.Factor = d.Factor
	}
	if o.FetchTimeout == 0 {
		o.FetchTimeout = d.FetchTimeout
	}
	if o.FailureBackoff == 0 {
		o.FailureBackoff = d.FailureBackoff
	}
	if o.MaxPagesPerHost == 0 {
		o.MaxPagesPerHost = d.MaxPagesPerHost
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every invalid field (the engine's checks included).
func (o *Options) Validate() error {
	_, err := o.engine()
	return err
}

// engine maps o onto the engine's options, starting from its defaults.
func (o *Options) engine() (engine.Options, error) {
	e := engine.DefaultOptions()
	e.ID, e.DataDir, e.Workers = o.ID, o.DataDir, o.Workers
	e.Fetcher.UserAgent, e.Fetcher.FetchTimeout = o.UserAgent, o.FetchTimeout
	e.Fetcher.AllowPrivate, e.Fetcher.DialContext, e.Fetcher.TLSConfig = o.AllowPrivate, o.DialContext, o.TLSConfig
	e.Frontier.MinDelay, e.Frontier.MaxDelay, e.Frontier.Factor = max(o.MinDelay, 0), o.MaxDelay, o.Factor
	e.Frontier.FailureBackoff = o.FailureBackoff
	// Beyond half the budget a host's URLs wait behind every other
	// host's (a trap host is slowed before it is cut off).
	e.MaxPagesPerHost, e.SoftPagesPerHost, e.MaxDepth = o.MaxPagesPerHost, max(o.MaxPagesPerHost, 0)/2, o.MaxDepth
	if len(o.Domains) > 0 || len(o.Exclude) > 0 {
		fo := engine.DefaultFilterOptions()
		fo.Deny = o.Exclude
		if len(o.Domains) > 0 {
			fo.Scope, fo.Suffixes = extract.ScopeSuffixes, o.Domains
		}
		lf, err := engine.NewSeedFilter(fo, nil)
		if err != nil {
			return e, fmt.Errorf("%w: Domains or Exclude: %v", ErrInvalidOptions, err)
		}
		e.Filter = lf
	}
	if f := o.OnFetch; f != nil {
		e.OnFetch = func(le engine.LogEntry) { f(pageOf(le)) }
	}
	e.Logger = o.Logger
	e.EnsureDefaults()
	return e, e.Validate()
}

// Page is one completed fetch.
type Page struct {
	URL string
	// Status is the HTTP status, or 0 if the fetch failed (Err says why).
	Status      int
	ContentType string
	Bytes       int64
	// Links is the number of links found on the page.
	Links    int
	Duration time.Duration
	Time     time.Time
	// Via is the page the URL was found on ("" for a seed).
	Via string
	// Err describes a failed fetch ("" if a response came back).
	Err string
}

func pageOf(e engine.LogEntry) Page {
	p := Page{URL: e.URL, ContentType: e.ContentType, Bytes: e.Bytes, Links: e.Links,
		Duration: e.Duration, Time: e.Time, Via: e.Via}
	if e.Status > 0 {
		p.Status = e.Status
	} else {
		p.Err = e.Outcome
		if e.Note != "" {
			p.Err += ": " + e.Note
		}
	}
	return p
}

// Crawler is one crawl node. Its methods are safe for concurrent use.
type Crawler struct {
	n *engine.Node
}

// Open opens the crawl in o.DataDir, or resumes the one there.
func Open(o Options) (*Crawler, error) {
	o.EnsureDefaults()
	eo, err := o.engine()
	if err != nil {
		return nil, err
	}
	n, err := engine.Open(eo)
	if err != nil {
		return nil, err
	}
	return &Crawler{n: n}, nil
}

// Seed adds URLs to crawl; URLs seen before are ignored.
func (c *Crawler) Seed(ctx context.Context, urls []string) error {
	return c.n.Seed(ctx, urls)
}

// Run crawls until nothing is queued or in flight, or until ctx is done
// (then it returns nil: the crawl resumes at the next Open and Run).
func (c *Crawler) Run(ctx context.Context) error {
	err := c.n.Run(ctx, true)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// Stats are a crawler's counters since it was opened.
type Stats struct {
	// Fetches is the number of completed fetches, OK those with a 2xx
	// response, Failed those without a response.
	Fetches, OK, Failed uint64
	Bytes               uint64
	// Queued is the number of URLs waiting in the frontier, Discovered
	// the number of new URLs admitted.
	Queued     int64
	Discovered uint64
	Elapsed    time.Duration
}

// Stats returns the crawler's counters.
func (c *Crawler) Stats() Stats {
	s := c.n.Stats()
	return Stats{Fetches: s.Fetches, OK: s.FetchOK, Failed: s.FetchErr, Bytes: s.Bytes,
		Queued: int64(s.Frontier.Queued), Discovered: s.NewURLs, Elapsed: s.Elapsed}
}

// Close stops the crawler's parts; call it after Run has returned. Every
// URL seeded or discovered is kept in DataDir.
func (c *Crawler) Close() error { return c.n.Close() }
