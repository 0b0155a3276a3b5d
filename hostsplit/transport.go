package hostsplit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/sextant-crawler/sextant/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
)

// node is what the Transport needs from the Splitter that composes it:
// applying received URLs under a steady view, and the routing side's
// counters for LocalStatus. Defined here, by its consumer.
type node interface {
	// underView runs fn with the current view, which does not change
	// until fn returns; ErrClosed once the splitter stops routing.
	underView(fn func(vs *viewState) error) error
	// deliverReceived gives URLs received in a batch to their owners
	// under vs: the Local sink, or (forwarded) the spool of their owner.
	deliverReceived(ctx context.Context, vs *viewState, kind Kind, urls []string, source string, seq uint64) (forwarded bool, err error)
	// routeStatus returns the Route calls in progress and the counters.
	routeStatus() (routing int64, st Stats)
	// resendAsked records a peer's resend token read from its status;
	// resendStatus returns this node's token, the tokens served by peer,
	// and whether one seen is not served yet (see resend.go).
	resendAsked(id NodeID, token uint64)
	resendStatus() (own uint64, served map[NodeID]uint64, busy bool)
}

// Transport moves batches between members over gRPC: one sender goroutine
// per peer streams the peer's spooled batches (coalesced into messages)
// and archives them as they are acknowledged; the Peer service applies the
// batches peers send, once per (sender, epoch, seq), and answers status
// calls, from which Terminated detects the end of the crawl. Safe for
// concurrent use; the Splitter that made it stops it.
type Transport struct {
	opts   *Options
	own    *Ownership
	spool  *Spool
	node   node
	health *health.Server

	mu    sync.RWMutex
	peers map[NodeID]*peer // every node known: current and previous members
	order []*peer          // the current members but Self, in membership order

	rejectedAuth    atomic.Uint64
	statusAsked     atomic.Uint64 // status calls made to peers
	statusServed    atomic.Uint64 // status calls answered
	rejectedUnknown atomic.Uint64 // malformed batches from unidentified senders

	recvStopOnce sync.Once
	recvStop     chan struct{} // closed by StopReceiving

	closing chan struct{} // closed by stop
	sendCtx context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the senders
}

// newTransport makes the peers of the current view (connecting lazily)
// and of the previous one. The senders start with startSenders.
func newTransport(opts *Options, own *Ownership, spool *Spool, n node) (*Transport, error) {
	t := &Transport{opts: opts, own: own, spool: spool, node: n, health: health.NewServer(),
		peers: map[NodeID]*peer{}, recvStop: make(chan struct{}), closing: make(chan struct{})}
	t.sendCtx, t.cancel = context.WithCancel(context.Background())
	vs := own.state()
	for _, m := range vs.v.Members {
		if m.ID == opts.Self {
			continue
		}
		p, err := t.newPeer(m.ID)
		if err == nil {
			err = t.dial(p, m.Addr)
		}
		if err != nil {
			t.closeConns()
			return nil, err
		}
		t.peers[m.ID] = p
		t.order = append(t.order, p)
	}
	for _, id := range vs.prev {
		if id == opts.Self || t.peers[id] != nil {
			continue
		}
		p, err := t.newPeer(id)
		if err != nil {
			t.closeConns()
			return nil, err
		}
		t.peers[id] = p
	}
	return t, nil
}

// newPeer loads the persisted state about id; it has no sender until dial
// and startSender.
func (t *Transport) newPeer(id NodeID) (*peer, error) {
	p := &peer{id: id}
	p.q.notify = make(chan struct{}, 1)
	if t.opts.PeerCache != nil {
		p.b.cache = t.opts.PeerCache()
	}
	if err := t.spool.openQueue(p); err != nil {
		return nil, err
	}
	return p, nil
}

// dial makes p's client connection (connecting lazily).
func (t *Transport) dial(p *peer, addr string) error {
	creds := insecure.NewCredentials()
	if t.opts.ClientTLS != nil {
		cfg := t.opts.ClientTLS.Clone()
		cfg.ServerName = string(p.id)
		creds = credentials.NewTLS(cfg)
	}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: KeepaliveTime / 2}),
		// Reconnect within RetryMax of a healed partition or a restarted
		// peer (gRPC's default backoff grows to 2 minutes).
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: 5 * time.Second,
			Backoff: backoff.Config{BaseDelay: t.opts.RetryMin, Multiplier: 1.6, Jitter: 0.2, MaxDelay: t.opts.RetryMax}}),
	}, t.opts.DialOptions...)
	conn, err := grpc.NewClient(addr, dial...)
	if err != nil {
		return fmt.Errorf("hostsplit: peer %s: %w", p.id, err)
	}
	p.l.conn = conn
	return nil
}

// startSenders starts the sender of every current member.
func (t *Transport) startSenders() {
	for _, p := range t.order {
		t.startSender(p)
	}
}

func (t *Transport) startSender(p *peer) {
	p.l.stop, p.l.stopped = make(chan struct{}), make(chan struct{})
	t.wg.Add(1)
	go t.sendLoop(p)
}

// stopSender stops p's sender and closes its connection; p keeps its
// state (a former member may still send to this node).
func (t *Transport) stopSender(p *peer) {
	if p.l.stop == nil {
		return
	}
	close(p.l.stop)
	<-p.l.stopped
	p.l.stop, p.l.stopped = nil, nil
	t.mu.Lock()
	if p.l.conn != nil {
		_ = p.l.conn.Close()
		p.l.conn = nil
	}
	t.mu.Unlock()
}

// adopt makes the peers of nvs current (starting senders for new members)
// and installs nvs as the view, atomically for peer lookups; it returns
// the peers that left, whose senders the caller stops.
func (t *Transport) adopt(nvs *viewState) (gone []*peer, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var order []*peer
	for _, m := range nvs.v.Members {
		if m.ID == t.opts.Self {
			continue
		}
		p := t.peers[m.ID]
		if p == nil {
			if p, err = t.newPeer(m.ID); err != nil {
				return nil, err
			}
			t.peers[m.ID] = p
		}
		if p.l.conn == nil {
			if err := t.dial(p, m.Addr); err != nil {
				return nil, err
			}
			t.startSender(p)
		}
		order = append(order, p)
	}
	for _, p := range t.order {
		if !nvs.v.Has(p.id) {
			gone = append(gone, p)
		}
	}
	t.order = order
	t.own.install(nvs)
	return gone, nil
}

// currentPeers returns the current members but Self, in order.
func (t *Transport) currentPeers() []*peer {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Clone(t.order)
}

// allPeers returns every known peer: current members in order, then
// former members by id.
func (t *Transport) allPeers() []*peer {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := slices.Clone(t.order)
	for _, id := range slices.Sorted(maps.Keys(t.peers)) {
		if p := t.peers[id]; !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func (t *Transport) peerByID(id NodeID) (*peer, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	p, ok := t.peers[id]
	return p, ok
}

// senders returns the peers of ids, each of which must have a sender.
func (t *Transport) senders(ids []NodeID) ([]*peer, error) {
	var out []*peer
	for _, id := range ids {
		p, ok := t.peerByID(id)
		if !ok || p.l.conn == nil {
			return nil, fmt.Errorf("hostsplit: no sender for %s", id)
		}
		out = append(out, p)
	}
	return out, nil
}

// Register registers the Peer service and the standard gRPC health service
// (serving until the Splitter closes) on the caller's server. The server
// must use TLS requiring client certificates signed by the cluster CA (see
// internal/tlsutil.ServerConfig) unless Options.Insecure is set.
func (t *Transport) Register(r grpc.ServiceRegistrar) {
	pb.RegisterPeerServer(r, &server{t: t})
	healthpb.RegisterHealthServer(r, t.health)
}

// StopReceiving ends the inbound batch streams (each after the batch it is
// applying) and refuses new ones, so that a graceful stop of the gRPC
// server does not wait for peers that keep their streams open. Closing the
// Splitter calls it; call it earlier when stopping the server first.
// Idempotent.
func (t *Transport) StopReceiving() {
	t.recvStopOnce.Do(func() { close(t.recvStop) })
}

func (t *Transport) isClosing() bool { return isClosed(t.closing) }

// stop stops the senders and waits for them (unacknowledged batches stay
// spooled for the next start).
func (t *Transport) stop() {
	close(t.closing)
	t.cancel()
	t.wg.Wait()
}

func (t *Transport) closeConns() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.peers {
		if p.l.conn != nil {
			_ = p.l.conn.Close()
		}
	}
}
