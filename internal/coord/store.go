package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
)

// ErrNoView: the cluster has no view in etcd yet (see Store.Init).
var ErrNoView = errors.New("coord: no view in etcd")

// Store is the cluster's view and membership change record in etcd: it
// implements handoff.Store. Safe for concurrent use; Close it.
type Store struct {
	o   Options
	cli *clientv3.Client
}

var _ handoff.Store = (*Store)(nil)

// Open connects to etcd.
func Open(o Options) (*Store, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cli, err := dial(o)
	if err != nil {
		return nil, err
	}
	return &Store{o: o, cli: cli}, nil
}

func dial(o Options) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: o.Endpoints, TLS: o.TLS, DialTimeout: o.DialTimeout,
		// Keep-alive pings find a dead connection fast; the client then
		// tries the other endpoints.
		DialKeepAliveTime: o.TTL / 2, DialKeepAliveTimeout: o.TTL / 4,
		Logger: zap.NewNop(),
		// After a partition heals the node must learn its fate within
		// about a renewal period, not after gRPC's reconnect back-off
		// (up to 2 min by default).
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: o.TTL / 4},
			MinConnectTimeout: o.DialTimeout,
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("coord: connecting to etcd: %w", err)
	}
	return cli, nil
}

// Close closes the connection.
func (s *Store) Close() error { return s.cli.Close() }

// Client is the underlying etcd client (for SetupAuth and tools).
func (s *Store) Client() *clientv3.Client { return s.cli }

// TTL is the lease TTL this store assumes for nodes that recorded none.
func (s *Store) TTL() time.Duration { return s.o.TTL }

func (s *Store) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.o.RequestTimeout)
}

// mapErr turns etcd's errors into handoff's sentinels.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	switch rpctypes.Error(err) {
	case rpctypes.ErrPermissionDenied, rpctypes.ErrUserEmpty, rpctypes.ErrAuthFailed, rpctypes.ErrInvalidAuthToken:
		return fmt.Errorf("%w: %w", handoff.ErrDenied, err)
	}
	return fmt.Errorf("coord: etcd: %w", err)
}

// Init stores v as the cluster's view unless the cluster has one already;
// it returns the view that is stored.
func (s *Store) Init(ctx context.Context, v hostsplit.View) (hostsplit.View, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return hostsplit.View{}, err
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	k := s.o.viewKey()
	resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(b))).Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return hostsplit.View{}, mapErr(err)
	}
	if resp.Succeeded {
		return v, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return hostsplit.View{}, ErrNoView
	}
	return decodeView(kvs[0].Value)
}

func decodeView(b []byte) (hostsplit.View, error) {
	var v hostsplit.View
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("coord: stored view: %w", err)
	}
	return v, nil
}

// viewRev reads the view with its mod revision.
func (s *Store) viewRev(ctx context.Context) (hostsplit.View, int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	resp, err := s.cli.Get(ctx, s.o.viewKey())
	if err != nil {
		return hostsplit.View{}, 0, mapErr(err)
	}
	if len(resp.Kvs) == 0 {
		return hostsplit.View{}, 0, ErrNoView
	}
	v, err := decodeView(resp.Kvs[0].Value)
	return v, resp.Kvs[0].ModRevision, err
}

// View returns the cluster's current view.
func (s *Store) View(ctx context.Context) (hostsplit.View, error) {
	v, _, err := s.viewRev(ctx)
	return v, err
}

// Current returns the latest change record.
func (s *Store) Current(ctx context.Context) (handoff.Record, bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	resp, err := s.cli.Get(ctx, s.o.changeKey())
	if err != nil {
		return handoff.Record{}, false, mapErr(err)
	}
	if len(resp.Kvs) == 0 {
		return handoff.Record{}, false, nil
	}
	var r handoff.Record
	if err := json.Unmarshal(resp.Kvs[0].Value, &r); err != nil {
		return r, false, fmt.Errorf("coord: stored change: %w", err)
	}
	r.Rev = resp.Kvs[0].ModRevision
	return r, true, nil
}

// Removed reports whether id was removed from the cluster.
func (s *Store) Removed(ctx context.Context, id hostsplit.NodeID) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	resp, err := s.cli.Get(ctx, s.o.removedKey(string(id)), clientv3.WithCountOnly())
	if err != nil {
		return false, mapErr(err)
	}
	return resp.Count > 0, nil
}

// putChange writes r (at phase to) if the change key is still at rev (0:
// absent), with more conditions and operations; it returns r with its
// new Rev, or ErrStale.
func (s *Store) putChange(ctx context.Context, r handoff.Record, to handoff.Phase, rev int64, cmps []clientv3.Cmp, ops ...clientv3.Op) (handoff.Record, error) {
	r.Phase = to
	r.Rev = 0
	b, err := json.Marshal(r)
	if err != nil {
		return r, err
	}
	k := s.o.changeKey()
	cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", rev))
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(append(ops, clientv3.OpPut(k, string(b)))...).Commit()
	if err != nil {
		return r, mapErr(err)
	}
	if !resp.Succeeded {
		return r, handoff.ErrStale
	}
	r.Rev = resp.Header.Revision
	return r, nil
}

// removedAbsent are the conditions that no member of v was removed.
func (s *Store) removedAbsent(v hostsplit.View) []clientv3.Cmp {
	var cmps []clientv3.Cmp
	for _, id := range v.IDs() {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(s.o.removedKey(string(id))), "=", 0))
	}
	return cmps
}

// anyRemoved reports ErrRemoved if a member of v was removed.
func (s *Store) anyRemoved(ctx context.Context, v hostsplit.View) error {
	for _, id := range v.IDs() {
		gone, err := s.Removed(ctx, id)
		if err != nil {
			return err
		}
		if gone {
			return fmt.Errorf("%w: %s", handoff.ErrRemoved, id)
		}
	}
	return nil
}

// Begin records r at PhasePreparing if r.Old is the current view, no
// change is open and r.New names no removed id.
func (s *Store) Begin(ctx context.Context, r handoff.Record) (handoff.Record, error) {
	if r.New.Epoch <= r.Old.Epoch {
		return r, fmt.Errorf("%w: new epoch %d not after %d", handoff.ErrStale, r.New.Epoch, r.Old.Epoch)
	}
	cur, ok, err := s.Current(ctx)
	if err != nil {
		return r, err
	}
	if ok && cur.Phase.Open() {
		return r, fmt.Errorf("%w: change %s is %s", handoff.ErrBusy, cur.ID, cur.Phase)
	}
	v, vrev, err := s.viewRev(ctx)
	if err != nil {
		return r, err
	}
	if v.Epoch != r.Old.Epoch {
		return r, fmt.Errorf("%w: view epoch %d, change from %d", handoff.ErrStale, v.Epoch, r.Old.Epoch)
	}
	if err := s.anyRemoved(ctx, r.New); err != nil {
		return r, err
	}
	rev := int64(0)
	if ok {
		rev = cur.Rev
	}
	cmps := append(s.removedAbsent(r.New), clientv3.Compare(clientv3.ModRevision(s.o.viewKey()), "=", vrev))
	return s.putChange(ctx, r, handoff.PhasePreparing, rev, cmps)
}

// Advance moves r to phase to (any but PhaseCommitting, which is Commit's;
// PhaseAborted only before PhaseCommitting).
func (s *Store) Advance(ctx context.Context, r handoff.Record, to handoff.Phase) (handoff.Record, error) {
	if to == handoff.PhaseCommitting || to == handoff.PhasePreparing {
		return r, fmt.Errorf("coord: Advance to %s: use Begin or Commit", to)
	}
	committed := r.Phase == handoff.PhaseCommitting || r.Phase == handoff.PhaseResuming || r.Phase == handoff.PhaseDone
	if committed && (to == handoff.PhaseAborted || to == handoff.PhaseFencing) {
		return r, fmt.Errorf("%w: change %s is %s: it only goes forward", handoff.ErrStale, r.ID, r.Phase)
	}
	if !r.Phase.Open() {
		return r, fmt.Errorf("%w: change %s has ended (%s)", handoff.ErrStale, r.ID, r.Phase)
	}
	out, err := s.putChange(ctx, r, to, r.Rev, nil)
	if err != nil || to != handoff.PhaseAborted {
		return out, err
	}
	// An aborted change leaves the old view, whose members its Fence
	// marked removed: they are members again (as handoff.MemStore does),
	// or a graceful leaver fenced just before a rollback would stop for
	// good with its hosts still its own in the view. Only marks this
	// change wrote are undone.
	for _, id := range dropped(r) {
		k := s.o.removedKey(string(id))
		cctx, cancel := s.ctx(ctx)
		_, derr := s.cli.Txn(cctx).If(clientv3.Compare(clientv3.Value(k), "=", r.ID)).Then(clientv3.OpDelete(k)).Commit()
		cancel()
		if derr != nil {
			return out, fmt.Errorf("coord: change %s aborted, but un-removing %s: %w", r.ID, id, mapErr(derr))
		}
	}
	return out, nil
}

// dropped are the members r fences: its Lost and those r.New drops.
func dropped(r handoff.Record) []hostsplit.NodeID {
	ids := slices.Clone(r.Lost)
	for _, id := range r.Old.IDs() {
		if !r.New.Has(id) && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// memberInfo is the value of a members/<id> key.
type memberInfo struct {
	TTLMillis int64 `json:"ttl_ms"`
}

// Fence records r's dropped members as removed (conditioned on r being
// current), then revokes their leases. It returns how long to wait before
// their hosts may be fetched by others: the longest lease TTL among the
// lost ones (r.Lost) holding a lease (a node stops within its TTL of its
// last renewal, which came before the revocation); 0 if none does.
func (s *Store) Fence(ctx context.Context, r handoff.Record) (time.Duration, error) {
	ids := dropped(r)
	if len(ids) == 0 {
		return 0, nil
	}
	var ops []clientv3.Op
	for _, id := range ids {
		ops = append(ops, clientv3.OpPut(s.o.removedKey(string(id)), r.ID))
	}
	k := s.o.changeKey()
	cctx, cancel := s.ctx(ctx)
	resp, err := s.cli.Txn(cctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", r.Rev)).Then(ops...).Commit()
	cancel()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		return 0, handoff.ErrStale
	}
	// From here no dropped node can attach a new lease (Session's grant
	// is conditioned on removed/<id> being absent): revoke the ones held.
	// The wait is the TTL the node recorded with its lease. A node whose
	// member key is gone has no lease: it expired (etcd's expiry comes
	// after the node's own fence, TTL−Margin after a renewal was sent) or
	// it never had one (never Held): nothing to wait for.
	var wait time.Duration
	for _, id := range ids {
		cctx, cancel := s.ctx(ctx)
		g, err := s.cli.Get(cctx, s.o.memberKey(string(id)))
		cancel()
		if err != nil {
			return 0, mapErr(err)
		}
		for _, kv := range g.Kvs {
			var mi memberInfo
			if !slices.Contains(r.Lost, id) {
				// A graceful leaver: paused and drained (it confirmed it
				// stopped before the change got here), so nothing to wait
				// for; its lease is revoked all the same.
			} else if json.Unmarshal(kv.Value, &mi) == nil && mi.TTLMillis > 0 {
				wait = max(wait, time.Duration(mi.TTLMillis)*time.Millisecond)
			} else {
				wait = max(wait, s.o.TTL)
			}
			if kv.Lease == 0 {
				continue
			}
			cctx, cancel := s.ctx(ctx)
			_, err := s.cli.Revoke(cctx, clientv3.LeaseID(kv.Lease))
			cancel()
			if err != nil && rpctypes.Error(err) != rpctypes.ErrLeaseNotFound {
				return 0, mapErr(err)
			}
		}
	}
	return wait, nil
}

// Commit makes r.New the cluster's view and moves r to PhaseCommitting in
// one transaction.
func (s *Store) Commit(ctx context.Context, r handoff.Record) (handoff.Record, error) {
	if r.Phase != handoff.PhasePreparing && r.Phase != handoff.PhaseFencing {
		return r, fmt.Errorf("%w: commit of change %s at %s", handoff.ErrStale, r.ID, r.Phase)
	}
	v, vrev, err := s.viewRev(ctx)
	if err != nil {
		return r, err
	}
	if v.Epoch != r.Old.Epoch {
		return r, fmt.Errorf("%w: view epoch %d, change from %d", handoff.ErrStale, v.Epoch, r.Old.Epoch)
	}
	if err := s.anyRemoved(ctx, r.New); err != nil {
		return r, err
	}
	b, err := json.Marshal(r.New)
	if err != nil {
		return r, err
	}
	cmps := append(s.removedAbsent(r.New), clientv3.Compare(clientv3.ModRevision(s.o.viewKey()), "=", vrev))
	return s.putChange(ctx, r, handoff.PhaseCommitting, r.Rev, cmps, clientv3.OpPut(s.o.viewKey(), string(b)))
}
