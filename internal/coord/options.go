package coord

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
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

// root is the key prefix of the cluster.
func (o *Options) root() string { return o.Prefix + o.Cluster + "/" }

func (o *Options) viewKey() string             { return o.root() + "view" }
func (o *Options) changeKey() string           { return o.root() + "change" }
func (o *Options) removedKey(id string) string { return o.root() + "removed/" + id }
func (o *Options) memberKey(id string) string  { return o.root() + "members/" + id }
