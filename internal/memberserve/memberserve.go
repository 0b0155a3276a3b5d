// Package memberserve serves a cluster member (internal/crawl.Member) on a
// gRPC server of its own: the few lines every program running a member
// (crawler node, the demo, studies) would otherwise repeat. The member
// owns no server (issue 26); the server Start makes is stopped by the
// member's Close, through Member.OnClose.
package memberserve

import (
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// StopBound is how long Close waits for the server's graceful stop (RPCs
// in flight to finish) before it stops it hard.
const StopBound = 5 * time.Second

// Start opens o's member and serves it on o.Listener, or on Self's
// address in o.Members if that is nil. Closing the member stops the
// server.
func Start(o crawl.MemberOptions) (*crawl.Member, error) {
	m, err := crawl.NewMember(o)
	if err != nil {
		return nil, err // o.Listener stays the caller's to close
	}
	lis := o.Listener
	if lis == nil {
		if lis, err = net.Listen("tcp", m.Addr()); err != nil {
			m.Close()
			return nil, fmt.Errorf("memberserve: listen: %w", err)
		}
	}
	srv := grpc.NewServer(m.ServerOptions()...)
	m.Register(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	m.OnClose(func() { stop(srv, done) })
	return m, nil
}

// stop stops srv gracefully within StopBound, then hard, and waits for
// Serve to return.
func stop(srv *grpc.Server, done <-chan struct{}) {
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(StopBound):
		srv.Stop()
	}
	<-done
}
