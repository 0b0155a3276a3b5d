package hostsplit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	pb "github.com/sextant-crawler/sextant/proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// sendLoop owns the stream to one peer: it sends the spooled batches in
// sequence order, forgets them as acknowledgements arrive, and reconnects
// with exponential backoff (with jitter) after any failure.
func (t *Transport) sendLoop(p *peer) {
	defer t.wg.Done()
	defer close(p.l.stopped)
	stop := p.l.stop
	pprof.Do(t.sendCtx, pprof.Labels("hostsplit", "send", "peer", string(p.id)), func(ctx context.Context) {
		backoff := t.opts.RetryMin
		for {
			if !t.waitPending(p, stop) {
				return
			}
			progress, err := t.runStream(ctx, p, stop)
			if t.isClosing() || isClosed(stop) {
				return
			}
			p.st.streamErrors.Add(1)
			if status.Code(err) == codes.InvalidArgument {
				p.st.rejectedByPeer.Add(1)
			}
			if progress || status.Code(err) == codes.Aborted {
				// Aborted: the peer is changing to our membership view;
				// it is worth retrying soon.
				backoff = t.opts.RetryMin
			}
			t.failed(p, "send", err, backoff)
			wait := backoff/2 + rand.N(backoff/2+1)
			select {
			case <-t.closing:
				return
			case <-stop:
				return
			case <-t.opts.Clock.After(wait):
			}
			if status.Code(err) != codes.Aborted {
				backoff = min(2*backoff, t.opts.RetryMax)
			}
		}
	})
}

// waitPending blocks until p has a spooled batch; false means closing or
// stopped.
func (t *Transport) waitPending(p *peer, stop <-chan struct{}) bool {
	for {
		p.q.mu.Lock()
		has := p.q.lastSeq > p.q.acked
		p.q.mu.Unlock()
		if has {
			return true
		}
		select {
		case <-t.closing:
			return false
		case <-stop:
			return false
		case <-p.q.notify:
		}
	}
}

// runStream runs one Send stream until it fails or the splitter closes.
// progress reports whether any batch was acknowledged.
func (t *Transport) runStream(ctx context.Context, p *peer, stop <-chan struct{}) (progress bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	// Opening the stream blocks while the connection is being made (to a
	// black-holed peer: until the connect timeout); a member that leaves
	// the view must not hold SetView that long.
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	stream, err := pb.NewPeerClient(p.l.conn).Send(ctx)
	if err != nil {
		return false, err
	}
	acks := make(chan uint64, t.opts.Window)
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			a, err := stream.Recv()
			if err != nil {
				errc <- err
				return
			}
			if a.GetEpoch() != t.spool.epoch() {
				continue
			}
			select {
			case acks <- a.GetAckedSeq():
			case <-ctx.Done():
				return
			}
		}
	}()
	p.q.mu.Lock()
	next := p.q.acked + 1
	p.q.mu.Unlock()
	// inflight holds the last seq of each message sent and not yet
	// acknowledged: Window bounds messages, not batches.
	var inflight []uint64
	ack := func(a uint64) {
		if t.spool.ackUpTo(p, a) {
			progress = true
			t.progressed(p)
		}
		next = max(next, a+1)
		for len(inflight) > 0 && inflight[0] <= a {
			inflight = inflight[1:]
		}
	}
	for {
		p.q.mu.Lock()
		last := p.q.lastSeq
		p.q.mu.Unlock()
		var hold <-chan time.Time
		for next <= last && len(inflight) < t.opts.Window {
			b, wait, err := t.message(p, next, last)
			if err != nil {
				return progress, err
			}
			if b == nil {
				hold = t.opts.Clock.After(wait)
				break
			}
			p.st.transmitted.Add(1)
			if b.Seq > p.l.wireHigh {
				p.l.wireHigh = b.Seq
				p.st.wireMessages.Add(1)
				p.st.wireBytes.Add(uint64(len(b.Urls)))
			}
			if err := stream.Send(b); err != nil {
				if !errors.Is(err, io.EOF) {
					return progress, err
				}
				// The stream ended; its real status comes from Recv. A
				// Close or a view change must not wait for it: a stream
				// whose server went away may never report (what was not
				// acknowledged stays spooled and is sent again).
				for {
					select {
					case err := <-errc:
						return progress, err
					case a := <-acks:
						ack(a)
					case <-t.closing:
						return progress, nil
					case <-stop:
						return progress, nil
					}
				}
			}
			inflight = append(inflight, b.Seq)
			next = b.Seq + 1
		}
		select {
		case a := <-acks:
			ack(a)
		case <-p.q.notify:
		case <-hold:
		case err := <-errc:
			return progress, err
		case <-t.closing:
			_ = stream.CloseSend()
			return progress, nil
		case <-stop:
			_ = stream.CloseSend()
			return progress, nil
		}
	}
}

// message builds the wire message that starts at spooled batch next (last
// is the last spooled). Batches of URLs are coalesced: a run of them, up to
// BatchMaxURLs URLs and BatchMaxBytes raw bytes, travels as one message,
// their URLs merged and encoded together (small batches, spooled often for
// durability, front-code and compress much better together). While the
// unsent URLs are fewer than BatchMaxURLs and the oldest was spooled less
// than CoalesceMaxAge ago, message returns nil and how long to wait.
func (t *Transport) message(p *peer, next, last uint64) (*pb.Batch, time.Duration, error) {
	// Decided from memory: the sender wakes for every batch spooled (every
	// group flush), and mostly to wait again.
	if wait := t.hold(p, next, last); wait > 0 {
		return nil, wait, nil
	}
	kind, count, enc, err := t.spool.st.getBatch(p.id, next)
	if err != nil {
		return nil, 0, err
	}
	b := &pb.Batch{Sender: string(t.opts.Self), Epoch: t.spool.epoch(), Seq: next, Count: uint32(count), Urls: enc,
		MembershipEpoch: t.own.Epoch(), Kind: kindToProto(kind)}
	if kind != KindURLs || t.opts.CoalesceMaxAge < 0 {
		return b, 0, nil
	}
	urls, err := DecodeBatch(enc, t.opts.Limits)
	if err != nil {
		return nil, 0, fmt.Errorf("hostsplit: spooled batch %d for %s: %w", next, p.id, err)
	}
	n, raw := len(urls), totalLen(urls)
	end := next
	for q := next + 1; q <= last; q++ {
		k, c, e, err := t.spool.st.getBatch(p.id, q)
		if err != nil {
			return nil, 0, err
		}
		if k != KindURLs || n+c > t.opts.BatchMaxURLs {
			break
		}
		more, err := DecodeBatch(e, t.opts.Limits)
		if err != nil {
			return nil, 0, fmt.Errorf("hostsplit: spooled batch %d for %s: %w", q, p.id, err)
		}
		if r := totalLen(more); raw+r <= t.opts.BatchMaxBytes {
			urls, n, raw, end = append(urls, more...), n+c, raw+r, q
			continue
		}
		break
	}
	if end == next {
		return b, 0, nil
	}
	slices.Sort(urls)
	urls = slices.Compact(urls)
	if b.Urls, err = EncodeBatch(nil, urls, t.opts.Codec); err != nil {
		return nil, 0, err
	}
	b.FirstSeq, b.Seq, b.Count = next, end, uint32(len(urls))
	return b, 0, nil
}

// hold returns how long the URL batches from next to last should wait for
// company before they travel: > 0 while they are fewer than BatchMaxURLs
// URLs and batch next was spooled by this process less than
// CoalesceMaxAge ago (batches of other kinds, and those spooled before
// this start, have no spooledAt and go at once).
func (t *Transport) hold(p *peer, next, last uint64) time.Duration {
	if t.opts.CoalesceMaxAge < 0 || t.isClosing() {
		return 0
	}
	p.q.mu.Lock()
	defer p.q.mu.Unlock()
	at, ok := p.q.spooledAt[next]
	if !ok {
		return 0
	}
	unsent := 0
	for q := next; q <= last && unsent < t.opts.BatchMaxURLs; q++ {
		unsent += p.q.pending[q]
	}
	if age := t.opts.Clock.Now().Sub(at); unsent < t.opts.BatchMaxURLs && age < t.opts.CoalesceMaxAge {
		return t.opts.CoalesceMaxAge - age
	}
	return 0
}
