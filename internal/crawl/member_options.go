package crawl

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"google.golang.org/grpc"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/logging"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// MemberOptions configure one node of a cluster: a Node plus its host
// splitter and gRPC server.
type MemberOptions struct {
	// Node configures the crawling node; its Splitter is set by the member.
	Node Options
	// Self is this node's id; Members lists every node (Self included)
	// with its gRPC address.
	Self    string
	Members []hostsplit.Member
	// TLS is this node's mTLS material (from `crawler certs`). Required:
	// peers accept only members signed by the cluster CA.
	TLS *tlsutil.Node
	// Listener is the bound gRPC listener the caller serves the member on
	// (internal/memberserve.Start listens on Self's address in Members if
	// it is nil). The member itself serves nothing.
	Listener net.Listener
	// PeerCacheAlgo and PeerCacheSize size the per-peer front cache of the
	// splitter (hits are not sent). Defaults: DefaultMemberOptions; "none"
	// disables it.
	PeerCacheAlgo string
	PeerCacheSize int
	// BatchMaxAge bounds how long a remote URL waits in a batch buffer
	// before it is spooled. Default 200 ms.
	BatchMaxAge time.Duration
	// FlushInterval is how long a worker's remote URLs may wait for a
	// shared flush to the spool (group commit). Default: DefaultMemberOptions.
	FlushInterval time.Duration
	// WireCoalesce is how long a spooled batch may wait for later ones to
	// share its wire message (hostsplit.Options.CoalesceMaxAge): the
	// small batches of frequent group commits then travel front-coded and
	// compressed together. Default 500 ms; < 0 sends each batch alone.
	WireCoalesce time.Duration
	// FullTrace and CrossTrace receive the fingerprint of every URL
	// entering the splitter and of every URL bound for a peer (for
	// `crawler cachesim`). Optional.
	FullTrace, CrossTrace func(fp uint64)
	// Logger for the splitter. Default: Node.Logger.
	Logger *slog.Logger
	// Services, if set, registers more services (e.g. the status page's
	// read-only NodeStatus) on the member's mTLS gRPC server before it
	// serves; they get the same peer authentication as the Peer service.
	Services func(grpc.ServiceRegistrar)
	// Epoch numbers the membership Members (default 1); a newer view the
	// node adopted in a membership change (see elastic.go) is persisted
	// and wins on restart. Joining starts a node added to a running
	// cluster: Members is the view it joins; it does not seed and does not
	// fetch until `crawler cluster add` commits that view.
	Epoch   uint64
	Joining bool
	// CrawlLogPath is read in a hand-off for the URLs this node fetched
	// (they become seen-only entries at the hosts' new owner). Default
	// Node.DataDir/crawl.log when Node.CrawlLog is nil; with a custom
	// CrawlLog and no path, hand-offs carry queued URLs only.
	CrawlLogPath string
	// Control, if set, fences the member: it fetches only while Control
	// holds (fence.go). Nil: no fencing (as before issue 25).
	Control Control

	testHandoffHook func(step string) // tests: called at each hand-off step
}

// EnsureDefaults fills zero fields with DefaultMemberOptions' values, and
// the node's (Node.ID becomes Self).
func (o *MemberOptions) EnsureDefaults() {
	d := DefaultMemberOptions()
	if o.PeerCacheAlgo == "" {
		o.PeerCacheAlgo = d.PeerCacheAlgo
	}
	if o.PeerCacheSize == 0 {
		o.PeerCacheSize = d.PeerCacheSize
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = d.FlushInterval
	}
	if o.Logger == nil {
		o.Logger = logging.OrDiscard(o.Node.Logger)
	}
	if o.Self != "" {
		o.Node.ID = o.Self
	}
	o.Node.EnsureDefaults()
}

// Validate reports every invalid field, the node's included.
func (o *MemberOptions) Validate() error {
	var errs []error
	if o.TLS == nil {
		errs = append(errs, fmt.Errorf("%w: TLS material is required", ErrInvalidOptions))
	}
	if o.Self == "" {
		errs = append(errs, fmt.Errorf("%w: Self is required", ErrInvalidOptions))
	} else if !slices.ContainsFunc(o.Members, func(m hostsplit.Member) bool { return string(m.ID) == o.Self }) {
		errs = append(errs, fmt.Errorf("%w: Self %q is not in Members", ErrInvalidOptions, o.Self))
	}
	if o.PeerCacheAlgo != "none" {
		if _, err := cache.New(o.PeerCacheAlgo, o.PeerCacheSize); err != nil {
			errs = append(errs, fmt.Errorf("%w: peer cache: %v", ErrInvalidOptions, err))
		}
	}
	if o.FlushInterval < 0 || o.BatchMaxAge < 0 {
		errs = append(errs, fmt.Errorf("%w: FlushInterval %v or BatchMaxAge %v < 0", ErrInvalidOptions, o.FlushInterval, o.BatchMaxAge))
	}
	if err := o.Node.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
