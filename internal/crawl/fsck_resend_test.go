package crawl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/hostsplit"
)

// startPair starts the 2-member loopback cluster on the data dirs under
// root (node-0, node-1), one worker each, not running. A member that
// refuses to start is the error, the other members closed.
func startPair(t *testing.T, root string) ([]*Member, error) {
	t.Helper()
	members, seats, err := LoopbackCluster(filepath.Join(root, "pki"), 2)
	if err != nil {
		t.Fatal(err)
	}
	var ms []*Member
	for i, s := range seats {
		m, err := StartMember(MemberOptions{Node: Options{DataDir: filepath.Join(root, s.ID), Workers: 1},
			Self: s.ID, Members: members, TLS: s.TLS, Listener: s.Listener})
		if err != nil {
			closeMembers(t, ms)
			for _, s := range seats[i+1:] {
				s.Listener.Close()
			}
			return nil, fmt.Errorf("%s: %w", s.ID, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

func closeMembers(t *testing.T, ms []*Member) {
	t.Helper()
	for _, m := range ms {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}
}

// frontierURLs returns the URLs queued in the frontier of the (closed)
// node in dir, by queueKey.
func frontierURLs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	fr, err := frontier.Open(filepath.Join(dir, frontierDir), Options{}.Frontier)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	out := map[string]bool{}
	if _, err := fr.Scan(func(it frontier.Item) error { out[queueKey(it.URL)] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// missing returns the URLs of want that are not in got (by queueKey).
func missing(want []string, got map[string]bool) []string {
	var out []string
	for _, u := range want {
		if !got[queueKey(u)] {
			out = append(out, u)
		}
	}
	return out
}

// channel returns m's counters about peer.
func channel(t *testing.T, m *Member, peer hostsplit.NodeID) hostsplit.Channel {
	t.Helper()
	for _, c := range m.Split.Transport().LocalStatus().Channels {
		if c.Peer == peer {
			return c
		}
	}
	t.Fatalf("%s has no channel to %s", m.self, peer)
	return hostsplit.Channel{}
}

// waitFor polls cond every 10 ms until it holds or ctx ends (fatal).
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// routeToNode1 starts the pair under root, has node-0 route URLs on hosts
// node-1 owns (only node-0's archive and node-1's frontier will know
// them), waits for node-1 to acknowledge them and closes the pair. It
// returns the URLs, which node-1's frontier holds.
func routeToNode1(ctx context.Context, t *testing.T, root string) []string {
	t.Helper()
	ms, err := startPair(t, root)
	if err != nil {
		t.Fatal(err)
	}
	var remote []string
	for i := 0; len(remote) < 5; i++ {
		u := fmt.Sprintf("http://h%d.example/", i)
		if owner, _ := ms[0].Split.Ownership().Ring().OwnerOfURL(u); owner == "node-1" {
			remote = append(remote, u)
		}
	}
	if err := ms[0].Split.Route(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if err := ms[0].Split.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "node-1 to acknowledge node-0's batches", func() bool {
		c := channel(t, ms[0], "node-1")
		return c.SentSeq > 0 && c.AckedSeq == c.SentSeq
	})
	if err := ms[1].Node.Flush(); err != nil {
		t.Fatal(err)
	}
	closeMembers(t, ms)
	if lost := missing(remote, frontierURLs(t, filepath.Join(root, "node-1"))); len(lost) > 0 {
		t.Fatalf("node-1's frontier lacks %v before the damage", lost)
	}
	return remote
}

// loseFrontier deletes node-1's frontier, checks the pair refuses to start
// and repairs node-1.
func loseFrontier(t *testing.T, root string) RepairReport {
	t.Helper()
	dir1 := filepath.Join(root, "node-1")
	if err := os.RemoveAll(filepath.Join(dir1, frontierDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := startPair(t, root); !errors.Is(err, ErrDamaged) {
		t.Fatalf("start without node-1's frontier: %v, want ErrDamaged", err)
	}
	rep, err := Repair(Options{DataDir: dir1, Workers: 1})
	if err != nil || !rep.Rebuilt {
		t.Fatalf("repair: %+v, %v", rep, err)
	}
	return rep
}

// A repaired member's frontier loses the URLs its peers sent it and it
// acknowledged; the peers keep them in their archive. Once the cluster runs
// again, a peer polling the member's status re-sends its archive, so the
// URLs are queued again.
func TestRepairResendsPeersArchive(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	remote := routeToNode1(ctx, t, root)
	loseFrontier(t, root)
	ms, err := startPair(t, root)
	if err != nil {
		t.Fatal(err)
	}
	// node-0 polls node-1 as its termination check does. Long enough
	// for many serves: node-1's sender retries within RetryMax (5 s).
	poll, cancelPoll := context.WithTimeout(ctx, 15*time.Second)
	defer cancelPoll()
	for poll.Err() == nil && ms[1].Split.Stats().Total.ReceivedURLs < uint64(len(remote)) {
		if _, err := ms[0].Split.Transport().PeerStatus(ctx, "node-1"); err != nil {
			t.Logf("status of node-1: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := ms[1].Node.Flush(); err != nil {
		t.Fatal(err)
	}
	closeMembers(t, ms)
	if lost := missing(remote, frontierURLs(t, filepath.Join(root, "node-1"))); len(lost) > 0 {
		t.Fatalf("after the repair node-1's frontier lacks %d of the %d URLs node-0 sent it: %v", len(lost), len(remote), lost)
	}
}

// A member advertises the token of its repair; a peer serves it once (a
// restart of the peer does not serve it again), and a member without a
// token triggers nothing.
func TestResendTokenServedOnce(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	routeToNode1(ctx, t, root)
	ms, err := startPair(t, root)
	if err != nil {
		t.Fatal(err)
	}
	// No token: a status poll re-sends nothing.
	ns, err := ms[0].Split.Transport().PeerStatus(ctx, "node-1")
	if err != nil || ns.ResendToken != 0 {
		t.Fatalf("node-1's status before any repair: token %d, %v", ns.ResendToken, err)
	}
	time.Sleep(3 * resendPollForTest)
	if st, c := ms[0].Split.Stats().Total, channel(t, ms[0], "node-1"); st.SentURLs != 0 || c.ResendServed != 0 {
		t.Fatalf("a member without a token made node-0 re-send %d URLs: %+v", st.SentURLs, c)
	}
	closeMembers(t, ms)

	rep := loseFrontier(t, root)
	if rep.ResendToken == 0 {
		t.Fatalf("repair of a member drew no resend token: %+v", rep)
	}
	if ms, err = startPair(t, root); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "node-0 to serve node-1's token", func() bool {
		if _, err := ms[0].Split.Transport().PeerStatus(ctx, "node-1"); err != nil {
			t.Logf("status of node-1: %v", err)
		}
		return channel(t, ms[0], "node-1").ResendServed == rep.ResendToken
	})
	if ms[0].Split.Stats().Total.SentURLs == 0 {
		t.Fatal("node-0 served node-1's token without re-sending a URL")
	}
	closeMembers(t, ms)

	// Restarted, node-0 still knows the token served: nothing is re-sent.
	if ms, err = startPair(t, root); err != nil {
		t.Fatal(err)
	}
	defer closeMembers(t, ms)
	ns, err = ms[0].Split.Transport().PeerStatus(ctx, "node-1")
	if err != nil || ns.ResendToken != rep.ResendToken {
		t.Fatalf("node-1's status after a restart: token %d (want %d), %v", ns.ResendToken, rep.ResendToken, err)
	}
	time.Sleep(3 * resendPollForTest)
	if st := ms[0].Split.Stats().Total; st.SentURLs != 0 {
		t.Fatalf("node-0 re-sent %d URLs for a token served before its restart", st.SentURLs)
	}
	if c := channel(t, ms[0], "node-1"); c.ResendServed != rep.ResendToken {
		t.Fatalf("node-0's channel to node-1 after a restart: %+v, want token %d served", c, rep.ResendToken)
	}
}

// resendPollForTest is how long the tests above give node-0's resender to
// act on a status poll (hostsplit polls acknowledgements every 100 ms).
const resendPollForTest = 100 * time.Millisecond
