package hostsplit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sextant-crawler/sextant/internal/logging"
	"google.golang.org/grpc"
)

// Sink receives the URLs this node owns: the local ones from Route and the
// ones peers send. It is defined here, by its consumer; the crawl loop
// passes its front cache + DUE. Deliver must be durable when it returns nil
// (e.g. the DUE's logged Add): a received batch is acknowledged to its
// sender only then, and the sender forgets it. Deliver may see a URL more
// than once (a resend after a crash), and is called concurrently.
type Sink interface {
	Deliver(ctx context.Context, urls []string) error
}

// Cache is a per-peer front cache of URL fingerprints (the cache package
// provides them). Seen reports whether fp was already present and records
// it. The splitter calls one Cache from one goroutine at a time.
type Cache interface {
	Seen(fp uint64) bool
}

// Clock is the time source for batch ages and retry backoff.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// LocalStatus is what the crawl loop reports about itself for Status.
type LocalStatus struct {
	// Idle: the frontier is empty, no fetch is in flight and nothing the
	// node received is still on its way into the frontier (DUE buffer
	// included). A node that is idle may only become busy by receiving URLs.
	Idle         bool
	FrontierSize int64
	InFlight     int64
	// Paused: stopped for a membership change with nothing in flight
	// and nothing buffered in the DUE (see Drained). Phase names the
	// transition state for reports.
	Paused bool
	Phase  string
}

// Options configures a Splitter. The constructor copies it; zero fields take
// the defaults stated on them.
type Options struct {
	Self    NodeID
	Members []Member // every node including Self; Addr is needed for peers
	// Epoch numbers the membership view Members (default 1). A view
	// adopted later by SetView is persisted and wins over an older Epoch
	// on restart. With Joining the node starts on epoch 0 (Members is
	// the view it will join): it routes nothing until SetView.
	Epoch   uint64
	Joining bool
	// ByDomain keys ownership by registered domain instead of host.
	ByDomain bool
	// DataDir holds the pebble store of the outbound spool and of the
	// last batch applied per sender. Required.
	DataDir string
	// Local receives the URLs this node owns. Required.
	Local Sink
	// PeerCache makes the front cache for one peer; nil means no cache.
	PeerCache func() Cache

	BatchMaxURLs  int           // URLs per batch; default 1000
	BatchMaxBytes int           // raw URL bytes per batch; default 512 KiB
	BatchMaxAge   time.Duration // a non-empty buffer is spooled this old; default 200ms, < 0 never
	Codec         Codec         // default CodecFrontZstd
	// CoalesceMaxAge is how long a spooled batch of URLs may wait for
	// later ones to share its wire message: the sender merges the
	// spooled batches waiting for a peer (up to BatchMaxURLs URLs and
	// BatchMaxBytes) into one message, encoded together. Batches are
	// spooled as often as callers Flush (for durability), often with a
	// few URLs each; coalesced, they front-code and compress several
	// times better. It delays delivery, not durability. Default 500ms;
	// < 0 sends each batch as it was spooled.
	CoalesceMaxAge time.Duration
	// Limits bound received batches; default Limits defaults. Batches this
	// node builds must fit them, and URLs longer than Limits.MaxURLLen are
	// dropped and counted (TooLong).
	Limits Limits
	// Window is how many unacknowledged batches a sender keeps on the
	// stream per peer; default 16.
	Window int

	// ClientTLS authenticates this node to its peers (mTLS; see
	// internal/tlsutil). Its ServerName is set per peer to the peer's id.
	// The gRPC server, owned by the caller, must require client
	// certificates; the receiver takes the sender's id from it.
	ClientTLS *tls.Config
	// Insecure allows plaintext without TLS (benchmarks only): the
	// receiver then trusts the sender id in each batch.
	Insecure    bool
	DialOptions []grpc.DialOption
	RetryMin    time.Duration // first backoff after a failed stream; default 50ms
	RetryMax    time.Duration // default 5s
	RPCTimeout  time.Duration // Status calls; default 5s
	// ErrorLogEvery rate-limits the log of a peer that stays unreachable:
	// each new kind of failure is logged at once, the same kind again at
	// most once per ErrorLogEvery (with the count not logged), and the
	// recovery once. Default 30s.
	ErrorLogEvery time.Duration

	// Status reports the crawl loop's state for the Status RPC and
	// termination detection; nil reports an idle node with an empty
	// frontier. It is called concurrently, from gRPC handlers.
	Status func() LocalStatus
	// FullTrace is called with the fingerprint of every URL entering
	// Route, CrossTrace with every URL bound for a peer (before the peer
	// cache). Both may be called concurrently.
	FullTrace, CrossTrace func(fp uint64)

	Logger *slog.Logger // default discard (see internal/logging)
	Clock  Clock        // default the real clock
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.BatchMaxURLs == 0 {
		o.BatchMaxURLs = 1000
	}
	if o.BatchMaxBytes == 0 {
		o.BatchMaxBytes = 512 << 10
	}
	if o.BatchMaxAge == 0 {
		o.BatchMaxAge = 200 * time.Millisecond
	}
	if o.Codec == 0 {
		o.Codec = CodecFrontZstd
	}
	if o.CoalesceMaxAge == 0 {
		o.CoalesceMaxAge = 500 * time.Millisecond
	}
	o.Limits.EnsureDefaults()
	if o.Window == 0 {
		o.Window = 16
	}
	if o.RetryMin == 0 {
		o.RetryMin = 50 * time.Millisecond
	}
	if o.RetryMax == 0 {
		o.RetryMax = 5 * time.Second
	}
	if o.RPCTimeout == 0 {
		o.RPCTimeout = 5 * time.Second
	}
	if o.ErrorLogEvery == 0 {
		o.ErrorLogEvery = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = logging.Discard()
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
}

// Validate reports every problem with the options.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("hostsplit: "+format, args...)) }
	self := false
	ids := map[NodeID]bool{}
	for _, m := range o.Members {
		if ids[m.ID] {
			bad("duplicate member %q", m.ID)
		}
		ids[m.ID] = true
		if m.ID == o.Self {
			self = true
		} else if m.Addr == "" {
			bad("member %q has no Addr", m.ID)
		}
	}
	if !self {
		bad("Self %q is not in Members", o.Self)
	}
	if o.DataDir == "" {
		bad("DataDir is required")
	}
	if o.Local == nil {
		bad("Local sink is required")
	}
	if err := o.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.BatchMaxURLs < 1 || o.BatchMaxURLs > o.Limits.MaxURLs {
		bad("BatchMaxURLs %d not in [1, Limits.MaxURLs=%d]", o.BatchMaxURLs, o.Limits.MaxURLs)
	}
	// The front-coded payload is at most raw bytes + 2 varints per URL.
	if o.BatchMaxBytes < 1 || o.BatchMaxBytes+o.Limits.MaxURLLen+20*(o.BatchMaxURLs+1) > o.Limits.MaxDecodedBytes {
		bad("BatchMaxBytes %d too large for Limits.MaxDecodedBytes %d", o.BatchMaxBytes, o.Limits.MaxDecodedBytes)
	}
	switch o.Codec {
	case CodecFront, CodecFrontZstd, CodecFrontS2:
	default:
		bad("unknown Codec %d", o.Codec)
	}
	if o.Window < 1 {
		bad("Window %d < 1", o.Window)
	}
	if o.ClientTLS == nil && !o.Insecure {
		bad("ClientTLS is required unless Insecure is set")
	}
	if o.RetryMin <= 0 || o.RetryMax < o.RetryMin {
		bad("RetryMin %v / RetryMax %v", o.RetryMin, o.RetryMax)
	}
	return errors.Join(errs...)
}
