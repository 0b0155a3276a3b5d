package crawl

import (
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
)

// StartMember opens o's member and serves it as internal/memberserve.Start
// does (which these tests cannot import: it imports this package).
func StartMember(o MemberOptions) (*Member, error) {
	m, err := NewMember(o)
	if err != nil {
		return nil, err
	}
	lis := o.Listener
	if lis == nil {
		if lis, err = net.Listen("tcp", m.Addr()); err != nil {
			m.Close()
			return nil, fmt.Errorf("listen: %w", err)
		}
	}
	srv := grpc.NewServer(m.ServerOptions()...)
	m.Register(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	m.OnClose(func() {
		stopped := make(chan struct{})
		go func() { srv.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			srv.Stop()
		}
		<-done
	})
	return m, nil
}
