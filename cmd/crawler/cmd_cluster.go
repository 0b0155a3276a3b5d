package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/termsafe"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
)

func init() {
	register(&command{name: "cluster", summary: "show or change a running cluster's membership (add or remove a node; hosts and queued URLs move)", run: runCluster})
}

const clusterUsage = `show|add|remove|abort|cert [flags]

Changes the membership of a running cluster. Every node serves the
Membership gRPC service on its mTLS port; this command calls it with an
operator's certificate from the cluster directory: --as NAME (default
admin) reads --pki/operator-NAME.pem and operator-NAME-key.pem, made by
'crawler certs' (an "admin" operator at cluster creation, or 'crawler certs
--operator NAME --out PKI' for another). Members refuse to change membership
for a member's certificate; 'show' also accepts one (--as node-1).

  crawler cluster show   --peer ADDR
      the view (epoch, members), phase and last hand-off of the node at
      ADDR and of every member it lists.
  crawler cluster cert   --pki DIR --id node-3 [--hosts H,...]
      issues a certificate for a new node id with the cluster CA in DIR.
  crawler cluster add    --peer ADDR --id node-3 --addr HOST:PORT
      adds a node. Start it first ('crawler node' with "join": true and the
      new membership in its config); then this command stops fetching
      cluster-wide (PREPARE), waits until no batch is in flight, makes every
      node adopt the new view (COMMIT: the hosts whose rendezvous owner
      changes — about 1/N — are handed over with their queued URLs and the
      URLs already fetched), waits until every hand-off is applied, and
      lets the cluster fetch again (RESUME).
  crawler cluster remove --peer ADDR --id node-1 [--lost]
      removes a node gracefully (it hands all its hosts over, then stays
      stopped: shut it down afterwards), or with --lost a node whose disk
      is gone: it is not contacted, batches spooled for it are re-routed,
      and its hosts are crawled again from the seeds by their new owners
      (what it had fetched is unknown to the others and is fetched again).
      A removed id is refused by every member from then on and cannot be
      added again: give a replacement node a new id.
  crawler cluster abort  --peer ADDR
      rolls back a change that has not committed (the members prepared for
      it fetch again on their current view). Refused once the change has
      committed: it can only go forward (run the add or remove again).

A change that has not committed within three quarters of --timeout rolls
back by itself: the command sends ROLLBACK and exits 1, and a member still
prepared 5 s after that deadline (the command was killed) rolls back on its
own. After the commit a change only goes forward: if the command fails or
is interrupted then (a node restarted), run it again with the same
arguments.

With --etcd ENDPOINTS (nodes started with 'crawler node --etcd') add,
remove and abort record the change in etcd as the operator (--etcd-cert
and --etcd-key default to --pki/operator-NAME.pem): the dropped nodes'
leases are revoked and their TTL waited before the new view is committed
there, and the nodes are fenced until they adopt it. Without --etcd such
nodes would stay fenced after the change.`

func runCluster(ctx context.Context, env *cmdEnv, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintf(env.stdout, "Usage: crawler cluster %s\n", clusterUsage)
			return nil
		}
		return usagef("cluster: want a subcommand: show, add, remove, abort or cert")
	}
	sub, args := args[0], args[1:]
	f := newFlags(env, "cluster "+sub, clusterUsage)
	pki := f.String("pki", "", "cluster directory from 'crawler certs' (ca.pem, <id>.pem, <id>-key.pem); default $SEXTANT_PKI")
	as := f.String("as", "admin", "the operator whose certificate this command presents (--pki/operator-NAME.pem); show also takes a member id")
	peer := f.String("peer", "", "gRPC address of any member (host:port)")
	id := f.String("id", "", "node id to add, remove or certify")
	addr := f.String("addr", "", "gRPC address of the node to add (as its peers dial it)")
	lost := f.Bool("lost", false, "remove: the node is gone with its disk (do not contact it; its hosts are crawled again)")
	hosts := f.String("hosts", "127.0.0.1,localhost", "cert: comma-separated extra host names and IPs for the certificate")
	timeout := f.Duration("timeout", 10*time.Minute, "give up after this long (run the command again to finish)")
	etcdF := addClusterEtcdFlags(f)
	if err := f.parse(args); err != nil {
		return err
	}
	if *timeout <= 0 {
		return usagef("cluster %s: --timeout %v must be positive", sub, *timeout)
	}
	if !slices.Contains([]string{"show", "add", "remove", "abort", "cert"}, sub) {
		return usagef("cluster: unknown subcommand %q (show, add, remove, abort, cert)", sub)
	}
	if *pki == "" {
		*pki = os.Getenv("SEXTANT_PKI")
	}
	if *pki == "" {
		return usagef("cluster %s: --pki is required", sub)
	}
	if sub == "cert" {
		return clusterCert(env, *pki, *id, *hosts)
	}
	if *peer == "" {
		return usagef("cluster %s: --peer is required", sub)
	}
	tn, err := loadIdentity(*pki, *as, sub == "show")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// The peer's id is unknown: accept any member certificate of the CA
	// for the first call (mTLS still authenticates it).
	states, err := crawl.MemberStates(ctx, tn, []hostsplit.Member{{ID: "", Addr: *peer}})
	if err != nil || len(states) == 0 {
		return fmt.Errorf("cluster: asking %s: %w", *peer, err)
	}
	cur := hostsplit.ViewFromProto(states[0].GetView())
	var store handoff.Store
	if sub != "show" {
		st, err := etcdF.open(*pki, *as)
		if err != nil {
			return fmt.Errorf("cluster %s: etcd: %w", sub, err)
		}
		if st != nil {
			defer st.Close()
			store = st
		}
	}
	switch sub {
	case "show":
		all, err := crawl.MemberStates(ctx, tn, cur.Members)
		printStates(env, cur, all)
		return err
	case "abort":
		return clusterAbort(ctx, env, tn, cur, store)
	case "add", "remove":
	default:
		return usagef("cluster: unknown subcommand %q (show, add, remove, abort, cert)", sub)
	}
	if *id == "" {
		return usagef("cluster %s: --id is required", sub)
	}
	nid := hostsplit.NodeID(*id)
	removed := removedIDs(states)
	if sub == "add" && slices.Contains(removed, nid) {
		return fmt.Errorf("cluster add: %s was removed from the cluster and may not come back under that id: %w; give the node a new id ('crawler cluster cert --id NEW-ID')", nid, handoff.ErrRemoved)
	}
	old, nw, err := changeViews(sub, cur, nid, *addr, *lost, *peer)
	if err != nil {
		return err
	}
	var lostIDs []hostsplit.NodeID
	if sub == "remove" && *lost {
		lostIDs = []hostsplit.NodeID{nid}
	}
	if len(nw.Members) == 0 {
		return usagef("cluster remove: cannot remove the last member")
	}
	fmt.Fprintf(env.stdout, "cluster: epoch %d %v -> epoch %d %v\n", old.Epoch, old.IDs(), nw.Epoch, nw.IDs())
	rep, err := crawl.ChangeMembership(ctx, crawl.ChangeOptions{TLS: tn, Old: old, New: nw, Lost: lostIDs, Removed: removed, Store: store, Logger: env.logger()})
	switch {
	case errors.Is(err, handoff.ErrTimeout), errors.Is(err, handoff.ErrAborted), errors.Is(err, handoff.ErrRemoved):
		return fmt.Errorf("cluster %s: %w", sub, err)
	case err != nil:
		return fmt.Errorf("cluster %s: %w (run the command again to finish the change)", sub, err)
	}
	printChange(env, rep, sub, nid, len(lostIDs) > 0)
	return nil
}

// clusterAbort rolls back the membership change in progress, if any.
func clusterAbort(ctx context.Context, env *cmdEnv, tn *tlsutil.Node, cur hostsplit.View, store handoff.Store) error {
	rep, err := crawl.AbortChange(ctx, crawl.AbortOptions{TLS: tn, Members: cur.Members, Store: store})
	switch {
	case errors.Is(err, handoff.ErrCommitted):
		return fmt.Errorf("cluster abort: %w", err)
	case rep.Epoch == 0 && err == nil:
		fmt.Fprintf(env.stdout, "cluster: no membership change in progress (view epoch %d); nothing to abort\n", cur.Epoch)
		return nil
	}
	if len(rep.RolledBack) > 0 {
		fmt.Fprintf(env.stdout, "cluster: the change to epoch %d is rolled back on %v; they fetch on epoch %d\n", rep.Epoch, rep.RolledBack, cur.Epoch)
	}
	if err != nil {
		return fmt.Errorf("cluster abort: %w (members not reached roll back by themselves after the change's deadline)", err)
	}
	return nil
}

// changeViews is the old and the new view of a change adding or removing
// nid, given the current view of the peer asked (a re-run finds it adopted).
func changeViews(sub string, cur hostsplit.View, nid hostsplit.NodeID, addr string, lost bool, peer string) (old, nw hostsplit.View, err error) {
	switch {
	case sub == "add" && !cur.Has(nid):
		if addr == "" {
			return old, nw, usagef("cluster add: --addr is required")
		}
		old = cur
		nw = hostsplit.View{Epoch: cur.Epoch + 1, Members: append(slices.Clone(cur.Members), hostsplit.Member{ID: nid, Addr: addr})}
	case sub == "add": // a re-run: the peer has adopted the view already
		nw = cur
		old = hostsplit.View{Epoch: cur.Epoch - 1, Members: slices.DeleteFunc(slices.Clone(cur.Members), func(m hostsplit.Member) bool { return m.ID == nid })}
	case cur.Has(nid):
		old = cur
		nw = hostsplit.View{Epoch: cur.Epoch + 1, Members: slices.DeleteFunc(slices.Clone(cur.Members), func(m hostsplit.Member) bool { return m.ID == nid })}
	default: // remove, re-run
		if addr == "" && !lost {
			return old, nw, usagef("cluster remove: %s is not in the view of %s (a re-run?): give its --addr, or --lost", nid, peer)
		}
		nw = cur
		old = hostsplit.View{Epoch: cur.Epoch - 1, Members: append(slices.Clone(cur.Members), hostsplit.Member{ID: nid, Addr: addr})}
	}
	return old, nw, nil
}

// printChange reports a committed membership change.
func printChange(env *cmdEnv, rep crawl.ChangeReport, sub string, nid hostsplit.NodeID, lost bool) {
	moved := rep.HandoffQueued + rep.HandoffSeen
	fmt.Fprintf(env.stdout, "cluster: epoch %d adopted by %d nodes in %v (drain %v, commit and hand-off %v, slowest hand-off %v)\n",
		rep.Epoch, rep.ParticipatingNodes, rep.Total.Round(time.Millisecond), rep.Prepare.Round(time.Millisecond),
		rep.Commit.Round(time.Millisecond), rep.MaxHandoff.Round(time.Millisecond))
	fmt.Fprintf(env.stdout, "cluster: handed over %d hosts: %d queued URLs, %d fetched URLs (seen-only), %d batches, %d wire bytes (%.1f bytes per moved URL, %.0f%% of raw)\n",
		rep.HandoffHosts, rep.HandoffQueued, rep.HandoffSeen, rep.HandoffBatches, rep.HandoffWireBytes,
		float64(rep.HandoffWireBytes)/float64(max(1, moved)), 100*float64(rep.HandoffWireBytes)/float64(max(1, rep.HandoffRawBytes)))
	if lost {
		fmt.Fprintf(env.stdout, "cluster: %s was lost: its hosts are crawled again from the seeds by their new owners (pages it fetched are fetched again; links to its hosts found only on pages of other hosts that were already crawled are not rediscovered)\n", nid)
	}
	if sub == "remove" && !lost {
		fmt.Fprintf(env.stdout, "cluster: %s has handed everything over and stays stopped; shut it down\n", nid)
	}
}

func printStates(env *cmdEnv, v hostsplit.View, states []*pb.MemberState) {
	fmt.Fprintf(env.stdout, "view epoch %d: %d members\n", v.Epoch, len(v.Members))
	if rm := removedIDs(states); len(rm) > 0 {
		fmt.Fprintf(env.stdout, "removed for good: %s\n", termsafe.String(fmt.Sprint(rm)))
	}
	for _, m := range v.Members {
		var st *pb.MemberState
		for _, s := range states {
			if s.GetNodeId() == string(m.ID) {
				st = s
			}
		}
		id, addr := termsafe.String(string(m.ID)), termsafe.String(m.Addr) // a peer's words
		if st == nil {
			fmt.Fprintf(env.stdout, "  %-10s %-22s unreachable\n", id, addr)
			continue
		}
		h := st.GetHandoff()
		fmt.Fprintf(env.stdout, "  %-10s %-22s epoch %d, %s", id, addr, st.GetView().GetEpoch(), termsafe.String(st.GetPhase()))
		if st.GetPendingEpoch() != 0 {
			fmt.Fprintf(env.stdout, " (changing to epoch %d", st.GetPendingEpoch())
			if d := st.GetPendingDeadlineUnixNano(); d != 0 {
				fmt.Fprintf(env.stdout, ", rolls back at %s unless committed", time.Unix(0, d).UTC().Format(time.RFC3339))
			}
			fmt.Fprint(env.stdout, ")")
		}
		if h.GetEpoch() != 0 {
			fmt.Fprintf(env.stdout, "; last hand-off (epoch %d): %d hosts, %d queued + %d fetched URLs, %d bytes, %v",
				h.GetEpoch(), h.GetHosts(), h.GetQueuedUrls(), h.GetSeenUrls(), h.GetWireBytes(), time.Duration(h.GetDurationNs()).Round(time.Millisecond))
		}
		fmt.Fprintln(env.stdout)
	}
}

// clusterCert issues a certificate for a new node id with the cluster CA.
func clusterCert(env *cmdEnv, dir, id, hosts string) error {
	if id == "" {
		return usagef("cluster cert: --id is required")
	}
	ca, err := tlsutil.LoadCA(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		return err
	}
	cert, key := tlsutil.NodeFiles(dir, id)
	if _, err := os.Stat(cert); err == nil {
		return fmt.Errorf("cluster cert: %s exists; not overwriting", cert)
	}
	var hs []string
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hs = append(hs, h)
		}
	}
	validity := time.Until(ca.Cert.NotAfter)
	if validity <= 0 {
		return fmt.Errorf("cluster cert: the CA expired at %v", ca.Cert.NotAfter)
	}
	c, k, err := ca.Issue(id, hs, validity)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cert, c, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(key, k, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "wrote %s and %s (signed by the cluster CA)\n", cert, key)
	return nil
}

// loadIdentity loads the certificate this command presents: operator name's
// (operator-NAME.pem in pki), or with memberOK a member's (NAME.pem).
func loadIdentity(pki, name string, memberOK bool) (*tlsutil.Node, error) {
	ca := filepath.Join(pki, "ca.pem")
	cert, key := tlsutil.OperatorFiles(pki, name)
	if _, err := os.Stat(cert); err == nil {
		return tlsutil.Load(ca, cert, key)
	}
	ncert, nkey := tlsutil.NodeFiles(pki, name)
	if _, err := os.Stat(ncert); err == nil {
		if memberOK {
			return tlsutil.Load(ca, ncert, nkey)
		}
		return nil, fmt.Errorf("cluster: %q is a member's certificate; membership changes need an operator's: 'crawler certs --operator NAME --out %s', then --as NAME", name, pki)
	}
	return nil, fmt.Errorf("cluster: no operator certificate %s: make one with 'crawler certs --operator %s --out %s'", cert, name, pki)
}

// removedIDs are the ids any member says were removed for good.
func removedIDs(states []*pb.MemberState) []hostsplit.NodeID {
	var out []hostsplit.NodeID
	for _, st := range states {
		for _, id := range st.GetRemoved() {
			if !slices.Contains(out, hostsplit.NodeID(id)) {
				out = append(out, hostsplit.NodeID(id))
			}
		}
	}
	return out
}
