package crawl

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sextant-crawler/sextant/frontier"
)

// RunGraceful is Run with workers that stop taking leases once ctx is
// done. Run's worker loop keeps leasing ready URLs after ctx is cancelled
// (frontier.Next hands out a ready lease without looking at ctx; process
// fails on the dead ctx and requeues it; the loop spins and Run never
// returns), so a crawl cancelled with work left (SIGINT, a limit) hangs.
// Until worker.loop checks ctx.Err() before Next, commands that stop a
// crawl early use RunGraceful; after that fix it can simply call Run.
func (n *Node) RunGraceful(ctx context.Context, stopWhenIdle bool) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, n.opts.Workers)
	for i := 0; i < n.opts.Workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := n.newWorker(i).gracefulLoop(wctx); err != nil {
				errc <- err
			}
		}(i)
	}
	var runErr error
	if stopWhenIdle {
		runErr = n.waitIdle(wctx, errc)
	} else {
		select {
		case <-wctx.Done():
		case runErr = <-errc:
		}
	}
	cancel()
	wg.Wait()
	if runErr == nil {
		select {
		case runErr = <-errc:
		default:
		}
	}
	return runErr
}

// gracefulLoop is worker.loop with a ctx check before each lease.
func (w *worker) gracefulLoop(ctx context.Context) error {
	for ctx.Err() == nil {
		l, err := w.n.fr.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, frontier.ErrClosed) {
				return nil
			}
			return fmt.Errorf("crawl: frontier: %w", err)
		}
		w.n.busy.Add(1)
		res, err := w.process(ctx, l)
		if ctx.Err() != nil && err != nil {
			res = frontier.Result{Requeue: true}
			err = nil
		}
		derr := w.n.fr.Done(l, res)
		w.n.busy.Add(-1)
		if err != nil {
			return err
		}
		if derr != nil {
			return fmt.Errorf("crawl: frontier done: %w", derr)
		}
	}
	return nil
}
