package hostsplit

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	goleak.VerifyTestMain(m)
}

// memSink records every URL delivered to it.
type memSink struct {
	mu    sync.Mutex
	got   map[string]int
	calls int
	// hook, if set, runs before recording; a non-nil error fails Deliver.
	hook func(urls []string) error
}

func newMemSink() *memSink { return &memSink{got: map[string]int{}} }

func (s *memSink) Deliver(_ context.Context, urls []string) error {
	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(urls); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	for _, u := range urls {
		s.got[u]++
	}
	return nil
}

func (s *memSink) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.got))
	for k, v := range s.got {
		out[k] = v
	}
	return out
}

// mapCache is a fake per-peer cache that remembers everything.
type mapCache map[uint64]bool

func (c mapCache) Seen(fp uint64) bool {
	if c[fp] {
		return true
	}
	c[fp] = true
	return false
}

// testCluster is N splitters on loopback with mTLS, each with its own
// gRPC server, data dir and memory sink.
type testCluster struct {
	t       testing.TB
	ca      *tlsutil.CA
	members []Member
	ids     []string
	nodes   []*testNode
	tweak   func(*Options)
}

type testNode struct {
	id   NodeID
	addr string
	dir  string
	tls  *tlsutil.Node
	sink *memSink
	srv  *grpc.Server
	sp   *Splitter
	done chan struct{}
}

func newTestCluster(t testing.TB, n int, tweak func(*Options)) *testCluster {
	t.Helper()
	ca, err := tlsutil.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := &testCluster{t: t, ca: ca, tweak: tweak}
	var lis []net.Listener
	for i := range n {
		id := fmt.Sprintf("node-%d", i)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis = append(lis, l)
		c.ids = append(c.ids, id)
		c.members = append(c.members, Member{ID: NodeID(id), Addr: l.Addr().String()})
		certPEM, keyPEM, err := ca.Issue(id, []string{"127.0.0.1", "localhost"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tn, err := tlsutil.FromPEM(ca.CertPEM, certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, &testNode{id: NodeID(id), addr: l.Addr().String(), dir: t.TempDir(), tls: tn, sink: newMemSink()})
	}
	for i, nd := range c.nodes {
		c.startSplitter(nd)
		c.serve(nd, lis[i])
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.stop(nd)
		}
	})
	return c
}

func (c *testCluster) options(nd *testNode) Options {
	o := Options{
		Self: nd.id, Members: c.members, DataDir: nd.dir, Local: nd.sink,
		ClientTLS: nd.tls.ClientConfig(c.ids), BatchMaxAge: 20 * time.Millisecond,
		RetryMin: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	}
	if c.tweak != nil {
		c.tweak(&o)
	}
	return o
}

func (c *testCluster) startSplitter(nd *testNode) {
	c.t.Helper()
	sp, err := New(c.options(nd))
	if err != nil {
		c.t.Fatal(err)
	}
	nd.sp = sp
}

// serve starts nd's gRPC server on l (or on its address if l is nil).
func (c *testCluster) serve(nd *testNode, l net.Listener) {
	c.t.Helper()
	if l == nil {
		var err error
		for range 100 { // the port may linger briefly after a stop
			if l, err = net.Listen("tcp", nd.addr); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			c.t.Fatal(err)
		}
	}
	opts := append(ServerOptions(Limits{}), grpc.Creds(credentials.NewTLS(nd.tls.ServerConfig(c.ids))))
	nd.srv = grpc.NewServer(opts...)
	nd.sp.Transport().Register(nd.srv)
	nd.done = make(chan struct{})
	go func(srv *grpc.Server, done chan struct{}) {
		defer close(done)
		_ = srv.Serve(l)
	}(nd.srv, nd.done)
}

// stopServer kills nd's server abruptly (open streams fail).
func (c *testCluster) stopServer(nd *testNode) {
	if nd.srv != nil {
		nd.srv.Stop()
		<-nd.done
		nd.srv = nil
	}
}

func (c *testCluster) stop(nd *testNode) {
	c.stopServer(nd)
	if nd.sp != nil {
		if err := nd.sp.Close(); err != nil {
			c.t.Errorf("close %s: %v", nd.id, err)
		}
		nd.sp = nil
	}
}

// restart stops nd's server and splitter and starts both again from the
// same data dir and address.
func (c *testCluster) restart(nd *testNode) {
	c.stop(nd)
	c.startSplitter(nd)
	c.serve(nd, nil)
}

// waitFor polls cond until it holds or the test's patience runs out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// simURLs returns n distinct URLs over hosts hosts, shaped like simweb's.
func simURLs(n, hosts int, seed int) []string {
	out := make([]string, n)
	for i := range out {
		h := (i*7919 + seed) % hosts
		out[i] = fmt.Sprintf("http://h%05d.sim.test/p/%d/%x.html", h, i%97, i*2654435761+seed)
	}
	return out
}

// ownedBy splits urls by owner under ring r.
func ownedBy(t *testing.T, r *Ring, urls []string) map[NodeID][]string {
	out := map[NodeID][]string{}
	for _, u := range urls {
		o, err := r.OwnerOfURL(u)
		if err != nil {
			t.Fatal(err)
		}
		out[o] = append(out[o], u)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
