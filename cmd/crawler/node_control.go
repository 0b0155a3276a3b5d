package main

import (
	"context"
	"sync/atomic"

	"github.com/sextant-crawler/sextant/internal/control"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/memberserve"
	"github.com/sextant-crawler/sextant/internal/status"
	"google.golang.org/grpc"
)

// nodeControl is a node's Controller (the Control service, for 'crawler
// ctl') with what runNodeConfig needs of it.
type nodeControl struct {
	ctl   *control.Controller
	ctx   context.Context    // cancelled by an operator's drain: the node's graceful stop (as SIGTERM)
	drain context.CancelFunc // cancels ctx
	self  status.SourceFunc  // the node's status, with its rules
	done  *atomic.Bool       // the cluster's crawl has terminated (seeds are refused from then on)
}

// newNodeControl makes the node's Controller and registers the node's
// NodeStatus (self, with the rules added) and Control services in mo.
func newNodeControl(ctx context.Context, mo *crawl.MemberOptions, id string, self status.SourceFunc) *nodeControl {
	nc := &nodeControl{done: new(atomic.Bool)}
	nc.ctx, nc.drain = context.WithCancel(ctx)
	nc.ctl = control.New(control.Options{ID: id, Logger: mo.Logger, Drain: nc.drain, Terminated: nc.done.Load})
	nc.self = withControl(self, nc.ctl)
	mo.Services = func(s grpc.ServiceRegistrar) {
		status.Register(s, nc.self)
		nc.ctl.Register(s)
	}
	return nc
}

// startNodeMember starts the member and puts the operator's persisted
// rules in force before it fetches.
func startNodeMember(mo crawl.MemberOptions, ctl *control.Controller) (*crawl.Member, error) {
	m, err := memberserve.Start(mo)
	if err != nil {
		return nil, err
	}
	if err := ctl.Attach(m.Node, mo.Node.DataDir); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// withControl adds the node's rules and held counts to its status
// snapshots.
func withControl(src status.SourceFunc, ctl *control.Controller) status.SourceFunc {
	return func() status.Snapshot {
		s := src()
		if st, err := ctl.Status(); err == nil {
			s.Control = control.Summary(st)
		}
		return s
	}
}
