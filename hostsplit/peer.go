package hostsplit

import (
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// peer is what this node knows about one other member. Each part of it
// belongs to one component and is guarded by that component's locks: the
// batch buffer to the Splitter (Route), the queue to the Spool, the link to
// the Transport. The counters are atomic and shared.
type peer struct {
	id NodeID
	b  buffer
	q  queue
	l  link
	st peerCounters
}

// buffer holds the URLs routed to a peer and not yet spooled.
type buffer struct {
	mu       sync.Mutex // guards every field
	cache    Cache
	buf      []string
	bufBytes int
	bufStart time.Time
	flushing int // URLs taken from buf, not yet spooled
}

// queue is the peer's durable outbound queue: the batches spooled and not
// yet acknowledged.
type queue struct {
	flushMu sync.Mutex // orders sequence assignment and spool writes

	mu          sync.Mutex // guards lastSeq, acked, pending, spooledAt, pendingURLs
	lastSeq     uint64
	acked       uint64
	pending     map[uint64]int       // spooled seq → URL count
	spooledAt   map[uint64]time.Time // when this process spooled URL batch seq (for coalescing)
	pendingURLs int

	notify chan struct{} // capacity 1: new batch spooled
}

// link is the transport's state about a peer: the connection and sender,
// and what was applied from it.
type link struct {
	conn *grpc.ClientConn // nil: no sender (a former member)

	stop    chan struct{} // closed to stop the sender (member left)
	stopped chan struct{} // closed when the sender has returned

	// wireHigh is the highest seq counted in the wire counters: batches
	// spooled before this start, and resends, are not counted again.
	// Used by the sender goroutine only.
	wireHigh uint64

	inMu      sync.Mutex // serialises applying batches from this peer
	inStateMu sync.Mutex // guards inEpoch, inApplied (written under inMu too)
	inEpoch   uint64
	inApplied uint64

	health peerHealth
}

type peerCounters struct {
	discovered, suppressed, tooLong, batchDups     atomic.Uint64
	sentURLs, sentBatches, wireBytes, rawBytes     atomic.Uint64
	spooledBytes, wireMessages                     atomic.Uint64
	ackedBatches, transmitted, streamErrors        atomic.Uint64
	recvBatches, recvURLs, dupBatches              atomic.Uint64
	malformed, rejectedByPeer, rerouted, forwarded atomic.Uint64
}

// wake wakes the sender of the queue without blocking.
func (q *queue) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func totalLen(urls []string) int {
	n := 0
	for _, u := range urls {
		n += len(u)
	}
	return n
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
