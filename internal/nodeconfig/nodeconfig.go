// Package nodeconfig is the configuration file of one node of a Sextant
// cluster (`crawler node --config FILE`): a JSON document naming the node,
// the cluster's membership with every member's advertised gRPC address, the
// data directory, the mTLS material made by `crawler certs`, and the crawl
// options (workers, front-cache sizes per worker and per peer, politeness,
// resolver overrides, scope, seeds, metrics address).
//
// Load reads and validates a file; Validate reports every problem at once,
// each naming its JSON field. Relative paths in a file are resolved against
// the file's directory. Resolve turns the resolver overrides into
// fetcher.Options.Resolve form, looking up host names (a compose service
// name such as "simweb") with the caller's lookup function once, at start.
// MemberOptions builds crawl.MemberOptions. Nothing here keeps state or
// starts goroutines; a Config is a plain value, not safe for concurrent
// mutation.
//
// All nodes of a cluster share the seed list and the membership; each keeps
// only the hosts it owns by rendezvous hashing (Thaler & Ravishankar), as in
// Mercator's host splitter (Broder, Najork & Wiener, WWW 2003).
package nodeconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/termsafe"
)

// ErrInvalid wraps every problem Validate finds.
var ErrInvalid = errors.New("nodeconfig: invalid config")

// DefaultMetricsListen is where /metrics, /healthz and /status are served
// unless the file says otherwise (loopback: exposing it is a choice).
const DefaultMetricsListen = "127.0.0.1:9100"

// Duration is a time.Duration written in JSON as a Go duration string
// ("250ms", "10s").
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler; it accepts a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"250ms\": %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Member is one node of the cluster and the address its peers dial.
type Member struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// TLS names the PEM files made by `crawler certs`.
type TLS struct {
	CA   string `json:"ca"`
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// Politeness is the per-host delay rule: delay = factor × the last fetch's
// duration, clamped to [min_delay, max_delay] (Mercator).
type Politeness struct {
	MinDelay *Duration `json:"min_delay,omitempty"`
	MaxDelay *Duration `json:"max_delay,omitempty"`
	Factor   *float64  `json:"factor,omitempty"`
	// FailureBackoff is the delay after a host's first consecutive
	// failure (doubling per failure up to MaxFailureBackoff).
	FailureBackoff    *Duration `json:"failure_backoff,omitempty"`
	MaxFailureBackoff *Duration `json:"max_failure_backoff,omitempty"`
}

// Config is one node's configuration file.
type Config struct {
	// ID is this node's id; it must be one of Members.
	ID string `json:"id"`
	// Listen is the gRPC listen address (default DefaultListen of this
	// member's Addr: the Addr itself if its host is an IP or localhost,
	// else its port on all interfaces, ":PORT").
	Listen string `json:"listen,omitempty"`
	// HealthListen, if set, serves the standard gRPC health service
	// without TLS (and nothing else) for probes such as Kubernetes' grpc
	// probe, which cannot present a client certificate.
	HealthListen string `json:"health_listen,omitempty"`
	// Members is the whole cluster, this node included.
	Members []Member `json:"members"`
	// Epoch numbers that membership (default 1). Membership changes are
	// made with `crawler cluster add|remove`, not by editing this file:
	// each node persists the view it adopted (in its data dir), which wins
	// over an older Epoch here on restart.
	Epoch uint64 `json:"epoch,omitempty"`
	// Join starts a node added to a running cluster: Members is then the
	// new membership (the old one plus this node); the node neither seeds
	// nor fetches until `crawler cluster add` commits it. Keep it set:
	// once the node has joined, its persisted view wins.
	Join bool `json:"join,omitempty"`
	// DataDir holds the frontier, the DUE, the spool and crawl.log.
	DataDir string `json:"data_dir"`
	TLS     TLS    `json:"tls"`

	// Workers is the number of fetching goroutines (default
	// crawl.DefaultOptions', at most crawl.MaxWorkers).
	Workers int `json:"workers,omitempty"`
	// CacheAlgo and CachePerWorker size each worker's front cache
	// (defaults crawl.DefaultOptions'; 0 entries disables it).
	CacheAlgo      string `json:"cache_algo,omitempty"`
	CachePerWorker *int   `json:"cache_per_worker,omitempty"`
	// PeerCacheAlgo and PeerCacheSize size the splitter's per-peer cache
	// (defaults crawl.DefaultMemberOptions'; 0 entries disables it).
	PeerCacheAlgo string `json:"peer_cache_algo,omitempty"`
	PeerCacheSize *int   `json:"peer_cache_size,omitempty"`
	// WireCoalesce is how long a batch spooled for a peer may wait for
	// later ones to share its wire message, front-coded and compressed
	// together (default 500 ms; negative: each batch alone).
	WireCoalesce *Duration `json:"wire_coalesce,omitempty"`

	Politeness Politeness `json:"politeness,omitempty"`
	// Dispatch is which worker fetches a ready host: "any" (default
	// crawl.DefaultOptions') or "host-affine" (frontier.Options.Dispatch).
	Dispatch string `json:"dispatch,omitempty"`
	// AllowPrivate lets the fetcher connect to loopback and private
	// addresses (a compose network, simweb).
	AllowPrivate bool `json:"allow_private,omitempty"`
	// Resolve maps a domain and its sub-domains to "host[:port]" instead
	// of DNS; a host name is looked up once at start. Needs AllowPrivate
	// when the target is private.
	Resolve map[string]string `json:"resolve,omitempty"`
	// CAFile is a PEM file of CA certificates trusted for HTTPS fetches in
	// addition to the system roots (crawl --ca-file; e.g. simweb --ca-out).
	CAFile string `json:"ca_file,omitempty"`

	// Scope is any, host, domain or suffixes (default any); Suffixes are
	// the domains in scope for suffixes.
	Scope    string   `json:"scope,omitempty"`
	Suffixes []string `json:"suffixes,omitempty"`
	// MaxPagesPerHost bounds the URLs admitted per host (default
	// crawl.DefaultOptions'; -1: unbounded). Beyond half of it a host's
	// URLs are admitted at low priority (crawl.Options.SoftPagesPerHost).
	MaxPagesPerHost int `json:"max_pages_per_host,omitempty"`
	// MaxRepeatedSegments rejects paths repeating a segment more often
	// (default 3; -1: no limit).
	MaxRepeatedSegments int `json:"max_repeated_segments,omitempty"`
	// UserAgent is sent with every request (default the fetcher's).
	UserAgent string `json:"user_agent,omitempty"`
	// Proxy: "env" (HTTPS_PROXY, HTTP_PROXY, NO_PROXY; the default, as
	// crawl.DefaultProxy), "none", or an http://HOST:PORT proxy for every
	// request; as the crawler's --proxy.
	Proxy string `json:"proxy,omitempty"`
	// NoFollow is "obey" (default) or "ignore": whether pages' nofollow
	// robots directives and rel=nofollow links are obeyed (crawl.Options.
	// NoFollow, --nofollow).
	NoFollow string `json:"nofollow,omitempty"`
	// FetchTimeout bounds one whole fetch (default 60 s).
	FetchTimeout *Duration `json:"fetch_timeout,omitempty"`
	// FetchAttempts is how many times in all a URL whose fetch timed out
	// or failed to connect is tried before it is logged as an error
	// (crawl.Options.FetchAttempts, --fetch-attempts; default 3).
	FetchAttempts int `json:"fetch_attempts,omitempty"`
	// BodyCap is the most body bytes fetched and searched for links
	// (default 16 MiB).
	BodyCap int64 `json:"body_cap,omitempty"`
	// DUEFlush is the DUE merge interval (default 500 ms).
	DUEFlush *Duration `json:"due_flush,omitempty"`
	// DUEFsync fsyncs the DUE's log before discovered URLs are
	// acknowledged (survives power loss; crawl.Options.DUEFsync).
	DUEFsync bool `json:"due_fsync,omitempty"`

	// SeedsFile has one URL per line ('#' comments); Seeds are more.
	SeedsFile string   `json:"seeds_file,omitempty"`
	Seeds     []string `json:"seeds,omitempty"`

	// MetricsListen serves /metrics, /healthz and /status (default
	// DefaultMetricsListen).
	MetricsListen string `json:"metrics_listen,omitempty"`
	// StatusListen serves the read-only HTML status page and its cluster
	// view (crawler node --status-listen, which overrides it); empty: a
	// loopback port, "off": none. A container publishes it with a
	// non-loopback address such as ":9180".
	StatusListen string `json:"status_listen,omitempty"`

	// Etcd, if set, fences the node on etcd (etcd.go).
	Etcd *Etcd `json:"etcd,omitempty"`
	// WARCDir, if set, archives every fetch (robots.txt included) as
	// WARC files PREFIX-ID-TIMESTAMP-SERIAL.warc.gz with a .cdxj index
	// beside each (crawl --warc-dir). Members may share it.
	WARCDir string `json:"warc_dir,omitempty"`
	// WARCMaxSize rotates WARC files at this many bytes (default 1 GiB).
	WARCMaxSize int64 `json:"warc_max_size,omitempty"`
	// WARCPrefix starts the WARC file names (default "sextant").
	WARCPrefix string `json:"warc_prefix,omitempty"`
	// WARCMetadata adds a metadata record with each page's outlinks.
	WARCMetadata bool `json:"warc_metadata,omitempty"`
	// WARCCompression is how WARC records are compressed: fast (the
	// default), huffman, store or 1-9 (crawl --warc-compression).
	WARCCompression string `json:"warc_compression,omitempty"`
	// Revisit makes the crawl continuous (revisit.go): "off" (default),
	// "adaptive" or an interval such as "24h", as crawl --revisit.
	// RevisitMin and RevisitMax bound the adaptive interval.
	Revisit    string    `json:"revisit,omitempty"`
	RevisitMin *Duration `json:"revisit_min,omitempty"`
	RevisitMax *Duration `json:"revisit_max,omitempty"`
}

// Load reads, defaults and validates a config file. Relative paths are
// taken relative to the file's directory. Unknown fields are errors (a
// misspelt option must not be silently ignored).
func Load(path string) (*Config, error) { return LoadAs(path, "") }

// LoadAs is Load with the node id set to id (unless id is empty) before
// defaults and validation, so that one file serves every member (a
// Kubernetes ConfigMap, a compose file): every "{id}" in data_dir and the
// tls paths is replaced by the id.
func LoadAs(path, id string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parse(b, id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.resolvePaths(filepath.Dir(path))
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes a config (no path resolution, no validation beyond JSON
// syntax and unknown fields) and fills defaults.
func Parse(b []byte) (*Config, error) { return parse(b, "") }

func parse(b []byte, id string) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid)
	}
	if id != "" {
		c.ID = id
	}
	for _, p := range []*string{&c.DataDir, &c.TLS.CA, &c.TLS.Cert, &c.TLS.Key} {
		*p = strings.ReplaceAll(*p, "{id}", c.ID)
	}
	c.EnsureDefaults()
	return &c, nil
}

func (c *Config) resolvePaths(dir string) {
	ps := []*string{&c.DataDir, &c.TLS.CA, &c.TLS.Cert, &c.TLS.Key, &c.SeedsFile, &c.CAFile, &c.WARCDir}
	if c.Etcd != nil {
		ps = append(ps, &c.Etcd.TLS.CA, &c.Etcd.TLS.Cert, &c.Etcd.TLS.Key)
	}
	for _, p := range ps {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// DefaultListen is the gRPC listen address for a member advertised at addr:
// addr itself when its host is an IP or "localhost" (a member on loopback
// is not exposed on every interface), else ":PORT" — a DNS name's
// interface is not known without resolving it (containers, pods: set
// "listen" to narrow it).
func DefaultListen(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if _, err := netip.ParseAddr(host); err == nil || host == "localhost" {
		return addr
	}
	return ":" + port
}

// EnsureDefaults fills unset fields.
func (c *Config) EnsureDefaults() {
	if c.Listen == "" {
		for _, m := range c.Members {
			if m.ID == c.ID {
				c.Listen = DefaultListen(m.Addr)
			}
		}
	}
	d, dm := crawl.DefaultOptions(), crawl.DefaultMemberOptions()
	if c.Workers == 0 {
		c.Workers = d.Workers
	}
	if c.CacheAlgo == "" {
		c.CacheAlgo = d.CacheAlgo
	}
	if c.CachePerWorker == nil {
		v := d.CachePerWorker
		c.CachePerWorker = &v
	}
	if c.PeerCacheAlgo == "" {
		c.PeerCacheAlgo = dm.PeerCacheAlgo
	}
	if c.PeerCacheSize == nil {
		v := dm.PeerCacheSize
		c.PeerCacheSize = &v
	}
	if c.Scope == "" {
		c.Scope = crawl.DefaultScope
	}
	if c.MaxPagesPerHost == 0 {
		c.MaxPagesPerHost = d.MaxPagesPerHost
	}
	if c.MaxRepeatedSegments == 0 {
		c.MaxRepeatedSegments = crawl.DefaultFilterOptions().MaxRepeatedSegments
	}
	if c.MetricsListen == "" {
		c.MetricsListen = DefaultMetricsListen
	}
}

// Validate reports every invalid field, each error wrapping ErrInvalid and
// naming the JSON field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	}
	if c.ID == "" {
		bad("id is required")
	}
	if len(c.Members) == 0 {
		bad("members: at least one member (this node) is required")
	}
	if !termsafe.Printable(c.ID) {
		bad("id %q: control or non-printable characters", c.ID)
	}
	c.validateMembers(bad)
	c.validateListens(bad)
	c.validateRevisit(bad)
	if _, err := fetcher.ParseProxy(c.Proxy); err != nil {
		bad("proxy %q: %v", c.Proxy, err)
	}
	if c.DataDir == "" {
		bad("data_dir is required")
	}
	if c.TLS.CA == "" || c.TLS.Cert == "" || c.TLS.Key == "" {
		bad("tls: ca, cert and key are all required (make them with 'crawler certs')")
	}
	if c.Workers < 1 || c.Workers > crawl.MaxWorkers {
		bad("workers %d: want 1 to %d", c.Workers, crawl.MaxWorkers)
	}
	if *c.CachePerWorker < 0 {
		bad("cache_per_worker %d < 0", *c.CachePerWorker)
	}
	if *c.PeerCacheSize < 0 {
		bad("peer_cache_size %d < 0", *c.PeerCacheSize)
	}
	c.validatePoliteness(bad)
	c.validateWARC(bad)
	if !httpguts.ValidHeaderFieldValue(c.UserAgent) {
		bad("user_agent %q: control characters are not allowed in a header", c.UserAgent)
	}
	if c.NoFollow != "" && c.NoFollow != crawl.NoFollowObey && c.NoFollow != crawl.NoFollowIgnore {
		bad("nofollow %q: want %s or %s", c.NoFollow, crawl.NoFollowObey, crawl.NoFollowIgnore)
	}
	if c.MaxRepeatedSegments < -1 {
		bad("max_repeated_segments %d: want ≥ 0, or -1 for no limit", c.MaxRepeatedSegments)
	}
	for i, d := range c.Suffixes {
		if strings.TrimSpace(d) == "" {
			bad("suffixes[%d] is empty", i)
		} else if err := (&extract.FilterOptions{Suffixes: []string{d}}).Validate(); err != nil {
			bad("suffixes[%d] %q: not a domain", i, d)
		}
	}
	if _, err := crawl.ParseScope(c.Scope); err != nil {
		bad("scope %q: want any, host, domain or suffixes", c.Scope)
	}
	if (c.Scope == "suffixes" || c.Scope == "suffix") && len(c.Suffixes) == 0 {
		bad("scope suffixes needs suffixes")
	}
	if c.MaxPagesPerHost < -1 {
		bad("max_pages_per_host %d: want > 0 or -1 (unbounded)", c.MaxPagesPerHost)
	}
	for dom, target := range c.Resolve {
		if dom == "" || strings.ContainsAny(dom, "/:@ ") {
			bad("resolve: bad domain %q", dom)
		}
		if err := hostPort(target, true); err != nil {
			if _, err2 := netip.ParseAddr(target); err2 != nil && !validHostName(target) {
				bad("resolve[%q] %q: want host, IP, host:port or IP:port", dom, target)
			}
		}
	}
	if len(c.Resolve) > 0 && !c.AllowPrivate {
		bad("resolve needs allow_private (overriding resolution is an operator's decision, and the targets are usually private)")
	}
	if c.SeedsFile == "" && len(c.Seeds) == 0 {
		bad("seeds_file or seeds is required (every node is given the same seed list)")
	}
	if len(errs) == 0 {
		// What the checks above miss, the node's own Validate catches
		// (named by its Go field, not by the JSON one).
		o := c.nodeOptions(nil, nil)
		o.EnsureDefaults()
		if err := o.Validate(); err != nil {
			bad("%v", err)
		}
	}
	c.validateEtcd(bad)
	return errors.Join(errs...)
}

// validateListens checks the listen addresses ("off" turns the status
// page off).
func (c *Config) validateListens(bad func(format string, args ...any)) {
	if err := hostPort(c.Listen, false); err != nil {
		bad("listen %q: %v", c.Listen, err)
	}
	if c.HealthListen != "" {
		if err := hostPort(c.HealthListen, false); err != nil {
			bad("health_listen %q: %v", c.HealthListen, err)
		}
	}
	if err := hostPort(c.MetricsListen, false); err != nil {
		bad("metrics_listen %q: %v", c.MetricsListen, err)
	}
	if c.StatusListen != "" && c.StatusListen != "off" {
		if err := hostPort(c.StatusListen, false); err != nil {
			bad("status_listen %q: %v", c.StatusListen, err)
		}
	}
}
