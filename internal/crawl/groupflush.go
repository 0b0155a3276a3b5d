package crawl

import (
	"context"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// groupFlusher flushes the splitter at most once per interval on behalf of
// every worker waiting for durability.
type groupFlusher struct {
	sp       *hostsplit.Splitter
	interval time.Duration

	mu      sync.Mutex
	next    *flushRound // the round new waiters join
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

type flushRound struct {
	done chan struct{}
	err  error
}

func newGroupFlusher(sp *hostsplit.Splitter, interval time.Duration) *groupFlusher {
	g := &groupFlusher{sp: sp, interval: interval, next: &flushRound{done: make(chan struct{})},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go g.loop()
	return g
}

func (g *groupFlusher) wait(ctx context.Context) error {
	g.mu.Lock()
	r := g.next
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	case <-g.stopped:
		return ErrClosed
	}
}

func (g *groupFlusher) loop() {
	defer close(g.stopped)
	for {
		select {
		case <-g.stop:
			return
		case <-g.kick:
		}
		// Let more workers join this round.
		select {
		case <-g.stop:
			return
		case <-time.After(g.interval):
		}
		g.mu.Lock()
		r := g.next
		g.next = &flushRound{done: make(chan struct{})}
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r.err = g.sp.Flush(ctx)
		cancel()
		close(r.done)
	}
}

func (g *groupFlusher) close() {
	close(g.stop)
	<-g.stopped
}

// termProbe runs the cluster's termination check (two status rounds over
// every member) in a goroutine it owns, one check at a time. A status call
// to an unreachable peer can hang for hostsplit's RPCTimeout (5 s, e.g. a
// black-holed peer): the loop that supervises the workers must not, or a
// pause, a failed worker or a stop would wait for it (issue 25, defect 5).
type termProbe struct {
	sp      *hostsplit.Splitter
	ctx     context.Context
	cancel  context.CancelFunc
	result  chan bool // capacity 1: the outcome of the check started last
	running bool      // a check is running; the caller clears it when it takes the result
	wg      sync.WaitGroup
}

func newTermProbe(ctx context.Context, sp *hostsplit.Splitter) *termProbe {
	p := &termProbe{sp: sp, result: make(chan bool, 1)}
	p.ctx, p.cancel = context.WithCancel(ctx)
	return p
}

// start begins a check unless one is running; its outcome arrives on
// result (true: terminated; false: not proven, e.g. a peer unreachable).
func (p *termProbe) start() {
	if p.running {
		return
	}
	p.running = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		done, err := p.sp.Transport().Terminated(p.ctx)
		p.result <- err == nil && done
	}()
}

// close cancels a running check and waits for it.
func (p *termProbe) close() {
	p.cancel()
	p.wg.Wait()
}
