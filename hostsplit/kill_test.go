package hostsplit

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/killtest"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// The kill -9 test runs each node as a child process (this test binary
// re-executed with SEXTANT_HOSTSPLIT_CHILD set), kills nodes with SIGKILL
// at random moments and restarts them from their data dirs.

const childEnv = "SEXTANT_HOSTSPLIT_CHILD"

// fileSink appends delivered URLs to a file and fsyncs: durable Deliver.
type fileSink struct {
	mu sync.Mutex
	f  *os.File
}

func (s *fileSink) Deliver(_ context.Context, urls []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.WriteString(strings.Join(urls, "\n") + "\n"); err != nil {
		return err
	}
	return s.f.Sync()
}

// childURLs is the deterministic list node id routes.
func childURLs(id string) []string {
	seed, _ := strconv.Atoi(strings.TrimPrefix(id, "node-"))
	return simURLs(3000, 300, 100+seed)
}

// childMain runs one node: it serves its peers and routes its URL list in
// page-sized chunks, recording after each Flush how far it got (as a crawl
// loop records finished pages), then prints "done" and serves until killed.
func childMain() int {
	id, dir, certs := os.Getenv("HS_ID"), os.Getenv("HS_DIR"), os.Getenv("HS_CERTS")
	var members []Member
	var ids []string
	for _, kv := range strings.Split(os.Getenv("HS_MEMBERS"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		members = append(members, Member{ID: NodeID(k), Addr: v})
		ids = append(ids, k)
	}
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "child:", err); return 1 }
	cf, kf := tlsutil.NodeFiles(certs, id)
	tn, err := tlsutil.Load(filepath.Join(certs, "ca.pem"), cf, kf)
	if err != nil {
		return fail(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "sink.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fail(err)
	}
	sp, err := New(Options{
		Self: NodeID(id), Members: members, DataDir: filepath.Join(dir, "spool"), Local: &fileSink{f: f},
		ClientTLS: tn.ClientConfig(ids), BatchMaxURLs: 40, BatchMaxAge: 10 * time.Millisecond,
		RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return fail(err)
	}
	var addr string
	for _, m := range members {
		if string(m.ID) == id {
			addr = m.Addr
		}
	}
	var l net.Listener
	for range 200 {
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return fail(err)
	}
	srv := grpc.NewServer(append(ServerOptions(Limits{}), grpc.Creds(credentials.NewTLS(tn.ServerConfig(ids))))...)
	sp.Transport().Register(srv)
	go func() { _ = srv.Serve(l) }()
	progressFile := filepath.Join(dir, "progress")
	start := 0
	if b, err := os.ReadFile(progressFile); err == nil {
		start, _ = strconv.Atoi(string(b))
	}
	ctx := context.Background()
	urls := childURLs(id)
	for i := start; i < len(urls); i += 30 {
		if err := sp.Route(ctx, urls[i:min(i+30, len(urls))]); err != nil {
			return fail(err)
		}
		if err := sp.Flush(ctx); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(progressFile, []byte(strconv.Itoa(min(i+30, len(urls)))), 0o644); err != nil {
			return fail(err)
		}
	}
	fmt.Println("done")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	srv.Stop()
	if err := sp.Close(); err != nil {
		return fail(err)
	}
	return 0
}

type childNode struct {
	id, dir string
	c       *killtest.Child
}

// finished reports whether the child has printed "done" (its URLs routed).
func (n *childNode) finished() bool {
	return strings.Contains(n.c.Output(), "done\n")
}

func TestKill9NoURLLost(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test skipped in -short mode")
	}
	certs := t.TempDir()
	const n = 3
	var ids, members []string
	for i := range n {
		id := fmt.Sprintf("node-%d", i)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, id+"="+l.Addr().String())
		l.Close()
		ids = append(ids, id)
	}
	if err := tlsutil.WriteCluster(certs, ids, []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	nodes := make([]*childNode, n)
	start := func(i int) {
		nodes[i].c = killtest.Start(t, killtest.Options{Env: []string{childEnv + "=1", "HS_ID=" + nodes[i].id,
			"HS_DIR=" + nodes[i].dir, "HS_CERTS=" + certs, "HS_MEMBERS=" + strings.Join(members, ",")}})
	}
	for i := range n {
		nodes[i] = &childNode{id: ids[i], dir: t.TempDir()}
		start(i)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill schedule seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	for k := range 5 {
		time.Sleep(time.Duration(20+r.IntN(200)) * time.Millisecond)
		i := r.IntN(n)
		t.Logf("trial %d: kill -9 %s", k, ids[i])
		nodes[i].c.Kill()
		start(i)
	}
	for i := range n {
		if err := nodes[i].c.Until(60*time.Second, nodes[i].finished); err != nil {
			t.Fatalf("%s never finished routing: %v\n%s", ids[i], err, nodes[i].c.Output())
		}
	}
	dirs := make([]string, n)
	for i := range nodes {
		dirs[i] = nodes[i].dir
	}
	checkOwnedDelivered(t, ids, dirs)
}

// checkOwnedDelivered waits until the sink of each node (dirs[i] holds
// ids[i]'s) has every URL the children route that the node owns, and
// fails at once on a URL it does not own.
func checkOwnedDelivered(t *testing.T, ids, dirs []string) {
	t.Helper()
	ring, _ := NewRing([]NodeID{"node-0", "node-1", "node-2"}, false)
	want := map[string]map[string]bool{}
	for _, id := range ids {
		want[id] = map[string]bool{}
	}
	for _, id := range ids {
		for _, u := range childURLs(id) {
			o, _ := ring.OwnerOfURL(u)
			want[string(o)][u] = true
		}
	}
	got := func(i int) map[string]bool {
		b, _ := os.ReadFile(filepath.Join(dirs[i], "sink.txt"))
		m := map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			if line != "" {
				m[line] = true
			}
		}
		return m
	}
	deadline := time.Now().Add(60 * time.Second)
	for i, id := range ids {
		for {
			g := got(i)
			missing := 0
			for u := range want[id] {
				if !g[u] {
					missing++
				}
			}
			extra := 0
			for u := range g {
				if !want[id][u] {
					extra++
				}
			}
			if extra > 0 {
				t.Fatalf("%s received %d URLs it does not own", id, extra)
			}
			if missing == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is missing %d of %d URLs", id, missing, len(want[id]))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
