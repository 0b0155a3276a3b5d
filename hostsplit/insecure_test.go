package hostsplit

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
)

// Insecure mode (benchmarks only) works end to end and trusts the batch's
// sender id, which must still name a member.
func TestInsecureModeDelivers(t *testing.T) {
	var lis []net.Listener
	var members []Member
	for _, id := range []NodeID{"a", "b"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis = append(lis, l)
		members = append(members, Member{ID: id, Addr: l.Addr().String()})
	}
	var sps []*Splitter
	var sinks []*memSink
	for i, m := range members {
		sink := newMemSink()
		sp, err := New(Options{Self: m.ID, Members: members, DataDir: t.TempDir(), Local: sink, Insecure: true,
			BatchMaxAge: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer(ServerOptions(Limits{})...)
		sp.Transport().Register(srv)
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Serve(lis[i]) }()
		t.Cleanup(func() { srv.Stop(); <-done; _ = sp.Close() })
		sps = append(sps, sp)
		sinks = append(sinks, sink)
	}
	urls := simURLs(500, 50, 8)
	if err := sps[0].Route(context.Background(), urls); err != nil {
		t.Fatal(err)
	}
	want := len(ownedBy(t, sps[0].Ownership().Ring(), urls)["b"])
	waitFor(t, "delivery", func() bool { return len(sinks[1].snapshot()) == want })
	if want == 0 {
		t.Fatal("no URL owned by b")
	}
}
