package coord

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// ErrInvalidOptions reports Options that Validate refuses.
var ErrInvalidOptions = errors.New("coord: invalid options")

// Options configure a connection to etcd (Open, NewSession).
type Options struct {
	// Endpoints of the etcd cluster ("https://host:port"). Required.
	Endpoints []string
	// TLS is the client's mTLS configuration; its certificate's common
	// name is the etcd user once auth is enabled. Nil: plain TCP.
	TLS *tls.Config
	// Prefix and Cluster place the keys: Prefix+Cluster+"/...". Defaults
	// "/sextant/" and "default".
	Prefix, Cluster string
	// DialTimeout bounds connecting; RequestTimeout bounds each request.
	// Defaults 2 s and 2 s.
	DialTimeout, RequestTimeout time.Duration
	// TTL is a Session's lease TTL (whole seconds, etcd's unit): a node cut
	// off from etcd stops fetching within it. Default 5 s.
	TTL time.Duration
	// Margin: a Session stops being Held Margin before its lease could
	// expire, for clock rate differences and the time a fetch needs to
	// start. Default TTL/5.
	Margin time.Duration
	// ElectionTimeout is the etcd cluster's Raft election timeout
	// (etcd's --election-timeout; default 1 s, etcd's default). When a
	// leader dies no renewal succeeds until a new one is elected, up to
	// twice this later, so NewSession refuses a TTL that cannot outlast
	// that (see validateSession).
	ElectionTimeout time.Duration
	// InitView, if set, is stored by a Session as the cluster's view while
	// etcd has none (a node's configured view on the cluster's first
	// start): tried in every renewal round until etcd answers, so nodes
	// may start before etcd has a quorum. A node without the right to
	// write it (RBAC) leaves it to the operator.
	InitView *hostsplit.View
	// Logger. Default: discard.
	Logger *slog.Logger
}

// DefaultOptions returns Options with every default set and no endpoints.
func DefaultOptions() Options {
	var o Options
	o.EnsureDefaults()
	return o
}

// EnsureDefaults fills in unset fields.
func (o *Options) EnsureDefaults() {
	if o.Prefix == "" {
		o.Prefix = "/sextant/"
	}
	if o.Cluster == "" {
		o.Cluster = "default"
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 2 * time.Second
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 2 * time.Second
	}
	if o.TTL == 0 {
		o.TTL = 5 * time.Second
	}
	if o.Margin == 0 {
		o.Margin = o.TTL / 5
	}
	if o.ElectionTimeout == 0 {
		o.ElectionTimeout = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every problem of o (after EnsureDefaults).
func (o *Options) Validate() error {
	var errs []error
	if len(o.Endpoints) == 0 {
		errs = append(errs, errors.New("no endpoints"))
	}
	if o.TTL < time.Second || o.TTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("TTL %v: etcd leases are whole seconds, at least 1", o.TTL))
	}
	if o.Margin < 0 || o.Margin >= o.TTL {
		errs = append(errs, fmt.Errorf("margin %v: must be in [0, TTL)", o.Margin))
	}
	if strings.Contains(o.Cluster, "/") {
		errs = append(errs, fmt.Errorf("cluster %q contains '/'", o.Cluster))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return nil
}

// renewEvery is how often a Session starts a renewal round.
func (o *Options) renewEvery() time.Duration { return o.TTL / 8 }

// validateSession checks that a Session survives the loss of etcd's
// leader (one member of three killed): the last renewal before the loss
// may be a renewal period old, the next succeeds only once a new leader
// is elected, which Raft does within twice the election timeout, and the
// session is Held only TTL−Margin after a renewal. Without this a member
// killed while leading fences every node (seen with TTL 2 s and etcd's
// default 1 s election timeout: fenced 1.61–1.71 s after the kill).
func (o *Options) validateSession() error {
	need := o.renewEvery() + 2*o.ElectionTimeout
	if o.TTL-o.Margin < need {
		return fmt.Errorf("%w: TTL %v with margin %v leaves %v to renew, less than a renewal period (%v) plus two etcd election timeouts (2 × %v): a leader election would fence every node; use a TTL of at least %v or a shorter election timeout",
			ErrInvalidOptions, o.TTL, o.Margin, o.TTL-o.Margin, o.renewEvery(), o.ElectionTimeout, minTTL(o.ElectionTimeout))
	}
	return nil
}

// minTTL is the smallest whole-second TTL validateSession accepts with the
// default margin (TTL/5) and renewal period (TTL/8): TTL·(1 − 1/5 − 1/8)
// ≥ 2·election, i.e. TTL ≥ 2.97·election.
func minTTL(election time.Duration) time.Duration {
	ttl := time.Second
	for ttl-ttl/5-ttl/8 < 2*election {
		ttl += time.Second
	}
	return ttl
}

// root is the key prefix of the cluster.
func (o *Options) root() string { return o.Prefix + o.Cluster + "/" }

func (o *Options) viewKey() string             { return o.root() + "view" }
func (o *Options) changeKey() string           { return o.root() + "change" }
func (o *Options) removedKey(id string) string { return o.root() + "removed/" + id }
func (o *Options) memberKey(id string) string  { return o.root() + "members/" + id }
