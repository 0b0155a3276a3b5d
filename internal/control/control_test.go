package control

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/logging"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
)

func TestChangeApply(t *testing.T) {
	h := func(s string) frontier.Match { return frontier.Match{Host: s} }
	d := func(s string) frontier.Match { return frontier.Match{Domain: s} }
	start := frontier.HostRules{Paused: []frontier.Match{h("a"), {}}, Blocked: []frontier.Match{d("x.org")},
		Overrides: map[string]frontier.Override{"a": {Delay: time.Second, MaxPages: 5}}}
	for _, tc := range []struct {
		name string
		ch   Change
		want frontier.HostRules
		err  bool
	}{
		{"pause again is a no-op", Change{Action: ActPause, Match: h("A ")}, start, false},
		{"pause domain", Change{Action: ActPause, Match: d(".b.com")},
			frontier.HostRules{Paused: []frontier.Match{h("a"), {}, d("b.com")}, Blocked: start.Blocked, Overrides: start.Overrides}, false},
		{"resume host", Change{Action: ActResume, Match: h("a")},
			frontier.HostRules{Paused: []frontier.Match{{}}, Blocked: start.Blocked, Overrides: start.Overrides}, false},
		{"resume all", Change{Action: ActResume}, frontier.HostRules{Blocked: start.Blocked, Overrides: start.Overrides}, false},
		{"unblock", Change{Action: ActUnblock, Match: d("x.org")}, frontier.HostRules{Paused: start.Paused, Overrides: start.Overrides}, false},
		{"block all refused", Change{Action: ActBlock}, start, true},
		{"set merges", Change{Action: ActSet, Match: h("a"), Override: frontier.Override{Factor: 2}},
			frontier.HostRules{Paused: start.Paused, Blocked: start.Blocked,
				Overrides: map[string]frontier.Override{"a": {Delay: time.Second, Factor: 2, MaxPages: 5}}}, false},
		{"set clear", Change{Action: ActSet, Match: h("a"), Clear: true}, frontier.HostRules{Paused: start.Paused, Blocked: start.Blocked}, false},
		{"set without host", Change{Action: ActSet, Override: frontier.Override{Factor: 2}}, start, true},
		{"set nothing", Change{Action: ActSet, Match: h("a")}, start, true},
		{"both host and domain", Change{Action: ActPause, Match: frontier.Match{Host: "a", Domain: "b"}}, start, true},
		{"unknown", Change{Action: "stop"}, start, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.ch.Apply(start)
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			if err == nil && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if len(start.Paused) != 2 || start.Overrides["a"].Factor != 0 {
		t.Fatal("Apply modified its argument")
	}
}

// fakeNode records what the Controller does to it.
type fakeNode struct {
	mu       sync.Mutex
	rules    frontier.HostRules
	seeds    []string
	inFlight int
}

func (n *fakeNode) Seed(_ context.Context, urls []string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seeds = append(n.seeds, urls...)
	return nil
}
func (n *fakeNode) SetHostRules(r frontier.HostRules) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rules = r.Clone()
	return nil
}
func (n *fakeNode) HostRules() frontier.HostRules {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rules.Clone()
}
func (n *fakeNode) HeldByRules() (int64, int64, error) { return 3, 4, nil }
func (n *fakeNode) ParkedInFlight() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.inFlight > 0 {
		n.inFlight-- // one poll later it is done
		return n.inFlight + 1
	}
	return 0
}
func (n *fakeNode) Stats() crawl.Stats { return crawl.Stats{Fetches: 7} }

// TestControllerPersists: a change is written to the data dir and a new
// Controller on the same dir puts it back in force; a pause waits for the
// fetches in flight; seeds are checked and counted.
func TestControllerPersists(t *testing.T) {
	dir := t.TempDir()
	var drained, terminated bool
	c := New(Options{ID: "n1", Logger: logging.Test(t), Drain: func() { drained = true }, Terminated: func() bool { return terminated }})
	if err := c.Change(context.Background(), "operator x", Change{Action: ActPause, Match: frontier.Match{Host: "a"}}); !errors.Is(err, ErrNotAttached) {
		t.Fatalf("before Attach: %v", err)
	}
	n := &fakeNode{inFlight: 3}
	if err := c.Attach(n, dir); err != nil {
		t.Fatal(err)
	}
	if err := c.Change(context.Background(), "operator x", Change{Action: ActPause, Match: frontier.Match{Host: "a"}}); err != nil {
		t.Fatal(err)
	}
	if n.inFlight != 0 {
		t.Fatalf("pause returned with %d fetches in flight", n.inFlight)
	}
	if err := c.Change(context.Background(), "operator x", Change{Action: ActSet, Match: frontier.Match{Host: "b"}, Override: frontier.Override{MaxPages: 9}}); err != nil {
		t.Fatal(err)
	}
	acc, probs, err := c.Seed(context.Background(), "operator x", []string{"http://s.example/", "ftp://bad/", "not a url"})
	if err != nil || acc != 1 || len(probs) != 2 || !slices.Equal(n.seeds, []string{"http://s.example/"}) {
		t.Fatalf("Seed: %d accepted, %v, %v; node got %v", acc, probs, err, n.seeds)
	}
	m := c.Metrics()
	if m.Changes != 2 || m.Seeded != 1 || m.SeedRejected != 2 || m.PauseRules != 1 || m.Overrides != 1 || m.HeldPaused != 3 || m.HeldBlocked != 4 {
		t.Fatalf("metrics %+v", m)
	}
	c.Drain("operator x")
	if !drained || !c.Metrics().Draining {
		t.Fatal("drain not started")
	}
	terminated = true
	if _, _, err := c.Seed(context.Background(), "operator x", []string{"http://s.example/"}); !errors.Is(err, ErrTerminated) {
		t.Fatalf("seed after termination: %v", err)
	}

	c2 := New(Options{Drain: func() {}})
	n2 := &fakeNode{}
	if err := c2.Attach(n2, dir); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(n2.rules, n.rules) {
		t.Fatalf("restored %+v, want %+v", n2.rules, n.rules)
	}
	if err := os.WriteFile(filepath.Join(dir, RulesFile), []byte(`{"blocked":[{}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c2.Attach(&fakeNode{}, dir); err == nil {
		t.Fatal("an invalid rules file was accepted")
	}
}

// TestServerOperatorOnly: over mTLS the Control service answers an
// operator certificate and refuses a member's with PermissionDenied.
func TestServerOperatorOnly(t *testing.T) {
	ca, err := tlsutil.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ident := func(cert, key []byte, err error) *tlsutil.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		n, err := tlsutil.FromPEM(ca.CertPEM, cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	srvID := ident(ca.Issue("node-1", []string{"127.0.0.1"}, time.Hour))
	member := ident(ca.Issue("node-2", []string{"127.0.0.1"}, time.Hour))
	op := ident(ca.IssueOperator("alice", time.Hour))

	scfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{srvID.Cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: srvID.Pool}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(scfg)))
	c := New(Options{ID: "node-1", Drain: func() {}})
	if err := c.Attach(&fakeNode{}, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	c.Register(srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	m := hostsplit.Member{ID: "node-1", Addr: lis.Addr().String()}
	pause := func(ctx context.Context, cl pb.ControlClient) (*pb.ControlStatus, error) {
		return cl.Rule(ctx, &pb.ControlRuleRequest{Action: ActPause, Host: "h"})
	}
	res := NewClient(member).Each(context.Background(), []hostsplit.Member{m}, pause)
	if st, _ := status.FromError(res[0].Err); st.Code() != codes.PermissionDenied {
		t.Fatalf("member certificate: %v, want PermissionDenied", res[0].Err)
	}
	res = NewClient(op).Each(context.Background(), []hostsplit.Member{m, {Addr: m.Addr}}, pause)
	for _, r := range res {
		if r.Err != nil || len(r.Status.Rules.Paused) != 1 || r.Status.Fetched != 7 {
			t.Fatalf("operator (server id %q): %+v", r.Member.ID, r)
		}
	}
}
