package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
)

// errRemoved: the node's id is marked removed in etcd.
var errRemoved = errors.New("coord: node was removed from the cluster")

// Session is a node's presence in etcd and its fence: a lease kept alive
// while etcd can be reached, the member key under it, and what the node
// last learned of the view. Safe for concurrent use; Close it (the lease is
// revoked, so a node leaving cleanly is not waited for).
type Session struct {
	o    Options
	st   *Store
	self hostsplit.NodeID

	mu struct {
		sync.Mutex
		lease    clientv3.LeaseID
		renewed  time.Time // when the last successful renewal was sent
		view     hostsplit.View
		viewOK   bool
		removed  bool
		adopted  uint64
		lastErr  error
		changed  chan struct{} // closed and replaced on every change
		expiring *time.Timer   // fires when the lease grows too old
	}
	stop   chan struct{}
	wg     sync.WaitGroup
	warned time.Time // last renewal failure logged (keepAlive's own)
}

// NewSession connects as node self and starts keeping its lease alive. It
// returns without waiting for etcd: Held says when the node may fetch.
func NewSession(o Options, self hostsplit.NodeID) (*Session, error) {
	o.EnsureDefaults()
	if err := o.validateSession(); err != nil {
		return nil, err
	}
	st, err := Open(o)
	if err != nil {
		return nil, err
	}
	s := &Session{o: st.o, st: st, self: self, stop: make(chan struct{})}
	s.mu.changed = make(chan struct{})
	s.wg.Add(2)
	go s.keepAlive()
	go s.watch()
	return s, nil
}

// Store is the session's store (the node's identity's rights).
func (s *Session) Store() *Store { return s.st }

// Held reports whether the node may start a fetch, and if not, why: its
// lease was renewed less than TTL-Margin ago, etcd's view is the one it
// adopted, lists it, and it was not removed.
func (s *Session) Held() (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heldLocked(time.Now())
}

func (s *Session) heldLocked(now time.Time) (bool, string) {
	switch {
	case s.mu.removed:
		return false, fmt.Sprintf("%s was removed from the cluster (view epoch %d)", s.self, s.mu.view.Epoch)
	case s.mu.renewed.IsZero():
		return false, "no etcd lease yet" + s.errNoteLocked()
	case now.Sub(s.mu.renewed) >= s.o.TTL-s.o.Margin:
		return false, fmt.Sprintf("etcd lease not renewed for %v (TTL %v)%s", now.Sub(s.mu.renewed).Round(time.Millisecond), s.o.TTL, s.errNoteLocked())
	case !s.mu.viewOK:
		return false, "no view in etcd yet"
	case !s.mu.view.Has(s.self):
		return false, fmt.Sprintf("%s is not a member of view epoch %d", s.self, s.mu.view.Epoch)
	case s.mu.adopted != s.mu.view.Epoch:
		return false, fmt.Sprintf("view epoch %d in etcd, node on epoch %d", s.mu.view.Epoch, s.mu.adopted)
	}
	return true, ""
}

func (s *Session) errNoteLocked() string {
	if s.mu.lastErr == nil {
		return ""
	}
	return ": " + s.mu.lastErr.Error()
}

// Adopt tells the session the view epoch the node has committed to.
func (s *Session) Adopt(epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.adopted != epoch {
		s.mu.adopted = epoch
		s.notifyLocked()
	}
}

// View returns the view last read from etcd (ok false before the first).
func (s *Session) View() (hostsplit.View, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.view, s.mu.viewOK
}

// Current reads the latest membership change record (crawl.ChangeRecords:
// a member past a change's deadline asks whether it committed).
func (s *Session) Current(ctx context.Context) (handoff.Record, bool, error) {
	return s.st.Current(ctx)
}

// Removed reports whether etcd says this node was removed.
func (s *Session) Removed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.removed
}

// Changed returns a channel closed at the next change of what Held
// reports (including the lease growing too old).
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.changed
}

func (s *Session) notifyLocked() {
	close(s.mu.changed)
	s.mu.changed = make(chan struct{})
}

// Close stops renewing, revokes the lease (best effort) and disconnects.
func (s *Session) Close() error {
	close(s.stop)
	s.wg.Wait()
	s.mu.Lock()
	lease := s.mu.lease
	if s.mu.expiring != nil {
		s.mu.expiring.Stop()
	}
	s.mu.Unlock()
	if lease != 0 {
		ctx, cancel := s.st.ctx(context.Background())
		_, _ = s.st.cli.Revoke(ctx, lease)
		cancel()
	}
	return s.st.Close()
}

// keepAlive starts a renewal round every renewal period (TTL/8) and
// re-reads the view and the removed mark in the same round (a
// linearizable read: it needs a quorum). Rounds start on a ticker, not a
// period after the previous one ended, so a round that failed does not
// also delay the next.
func (s *Session) keepAlive() {
	defer s.wg.Done()
	every := s.o.renewEvery()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		s.round(time.Now().Add(every))
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

// attemptTimeout bounds one renewal attempt: an attempt stuck on a dead
// or leaderless member gives up early enough for the round to try again,
// on another member, well before the lease grows too old.
func (s *Session) attemptTimeout() time.Duration {
	return max(min(s.o.RequestTimeout, s.o.TTL/8), 50*time.Millisecond)
}

// round renews until one attempt succeeds or the round's deadline (the
// next round's start) passes. On success renewed becomes the time the
// successful attempt was sent: etcd's lease outlives it by the TTL.
func (s *Session) round(deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	defer cancel()
	for {
		sent := time.Now()
		actx, acancel := context.WithTimeout(ctx, s.attemptTimeout())
		renewed, err := s.attempt(actx)
		acancel()
		s.mu.Lock()
		s.mu.lastErr = err
		if renewed {
			s.renewedLocked(sent)
		}
		s.mu.Unlock()
		if err == nil || errors.Is(err, handoff.ErrDenied) || s.Removed() {
			return
		}
		// Another attempt: the client's balancer picks the next member;
		// a short pause keeps a refusing member from being hammered.
		select {
		case <-ctx.Done():
			// Rounds fail every TTL/8 while etcd is away: once per TTL
			// is enough to say so.
			if time.Since(s.warned) >= s.o.TTL {
				s.warned = time.Now()
				s.o.Logger.Warn("coord: etcd lease renewal failed", "node", s.self, "err", err)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// attempt is one renewal and read of the view; a removed node only
// follows the view (it is never renewed again).
func (s *Session) attempt(ctx context.Context) (renewed bool, err error) {
	if s.Removed() {
		return false, s.refresh(ctx)
	}
	err = s.renew(ctx)
	if err == nil || errors.Is(err, errRemoved) { // a removed node still learns the view
		if rerr := s.refresh(ctx); err == nil || rerr != nil {
			err = rerr
		}
	}
	return err == nil, err
}

// renewedLocked records a successful renewal sent at sent.
func (s *Session) renewedLocked(sent time.Time) {
	if !sent.After(s.mu.renewed) {
		return
	}
	held, _ := s.heldLocked(time.Now())
	s.mu.renewed = sent
	if h, _ := s.heldLocked(time.Now()); h != held {
		s.notifyLocked()
	}
	// Tell waiters when this renewal grows too old.
	if s.mu.expiring != nil {
		s.mu.expiring.Stop()
	}
	s.mu.expiring = time.AfterFunc(time.Until(sent.Add(s.o.TTL-s.o.Margin)), func() {
		s.mu.Lock()
		s.notifyLocked()
		s.mu.Unlock()
	})
}

// renew keeps the lease alive, or grants a new one and attaches the member
// key to it unless the node was removed.
func (s *Session) renew(ctx context.Context) error {
	s.mu.Lock()
	lease := s.mu.lease
	s.mu.Unlock()
	if lease != 0 {
		cctx, cancel := s.st.ctx(ctx)
		_, err := s.st.cli.KeepAliveOnce(cctx, lease)
		cancel()
		if err == nil {
			return nil
		}
		if rpctypes.Error(err) != rpctypes.ErrLeaseNotFound {
			return mapErr(err)
		}
		// Expired or revoked: a fresh lease, unless removed (below).
	}
	cctx, cancel := s.st.ctx(ctx)
	defer cancel()
	g, err := s.st.cli.Grant(cctx, int64(s.o.TTL/time.Second))
	if err != nil {
		return mapErr(err)
	}
	b, _ := json.Marshal(memberInfo{TTLMillis: s.o.TTL.Milliseconds()})
	rk := s.o.removedKey(string(s.self))
	resp, err := s.st.cli.Txn(cctx).If(clientv3.Compare(clientv3.CreateRevision(rk), "=", 0)).
		Then(clientv3.OpPut(s.o.memberKey(string(s.self)), string(b), clientv3.WithLease(g.ID))).Commit()
	if err != nil {
		_, _ = s.st.cli.Revoke(cctx, g.ID)
		return mapErr(err)
	}
	if !resp.Succeeded {
		// Removed: refresh (in round) reads the view first, then marks
		// the node removed, so that it reports the view that removed it.
		_, _ = s.st.cli.Revoke(cctx, g.ID)
		return errRemoved
	}
	s.mu.Lock()
	s.mu.lease = g.ID
	s.mu.Unlock()
	return nil
}

func (s *Session) setRemoved() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.mu.removed {
		s.mu.removed = true
		s.notifyLocked()
	}
}

// Refresh reads the view and the removed mark now (crawl.Refresher).
func (s *Session) Refresh(ctx context.Context) error { return s.refresh(ctx) }

// refresh reads the view and the removed mark.
func (s *Session) refresh(ctx context.Context) error {
	cctx, cancel := s.st.ctx(ctx)
	defer cancel()
	resp, err := s.st.cli.Txn(cctx).Then(clientv3.OpGet(s.o.viewKey()),
		clientv3.OpGet(s.o.removedKey(string(s.self)), clientv3.WithCountOnly())).Commit()
	if err != nil {
		return mapErr(err)
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		if err := s.setView(kvs[0].Value); err != nil {
			return err
		}
	} else if s.o.InitView != nil {
		v, err := s.st.Init(ctx, *s.o.InitView)
		if err != nil && !errors.Is(err, handoff.ErrDenied) {
			return err
		}
		if err == nil {
			s.setViewValue(v)
		}
	}
	if resp.Responses[1].GetResponseRange().Count > 0 {
		s.setRemoved()
	} else {
		s.clearRemoved()
	}
	return nil
}

// clearRemoved: the removed mark is gone (the change that fenced this node
// was aborted, Store.Advance): the node is a member again and renews.
func (s *Session) clearRemoved() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.removed {
		s.mu.removed = false
		s.notifyLocked()
	}
}

func (s *Session) setView(b []byte) error {
	v, err := decodeView(b)
	if err != nil {
		return err
	}
	s.setViewValue(v)
	return nil
}

func (s *Session) setViewValue(v hostsplit.View) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.mu.viewOK || v.Epoch > s.mu.view.Epoch {
		s.mu.view, s.mu.viewOK = v, true
		s.notifyLocked()
	}
}

// watch follows the view and the removed mark between renewals, so that a
// connected node stops at once when they change.
func (s *Session) watch() {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	for ctx.Err() == nil {
		// Two keys, not the prefix: a node may read only these.
		wctx, wcancel := context.WithCancel(ctx)
		vc := s.st.cli.Watch(wctx, s.o.viewKey())
		rc := s.st.cli.Watch(wctx, s.o.removedKey(string(s.self)))
		for vc != nil && rc != nil {
			var wr clientv3.WatchResponse
			var ok bool
			select {
			case wr, ok = <-vc:
				if !ok {
					vc = nil
				}
			case wr, ok = <-rc:
				if !ok {
					rc = nil
				}
			}
			for _, ev := range wr.Events {
				if ev.Type != clientv3.EventTypePut {
					if string(ev.Kv.Key) != s.o.viewKey() {
						_ = s.refresh(ctx) // un-removed (an aborted change)
					}
					continue
				}
				if string(ev.Kv.Key) == s.o.viewKey() {
					_ = s.setView(ev.Kv.Value)
				} else if s.refresh(ctx) != nil {
					// refresh reads the view before marking the node
					// removed; failing that, removed all the same.
					s.setRemoved()
				}
			}
		}
		wcancel()
		select {
		case <-ctx.Done():
		case <-time.After(s.o.TTL / 4):
		}
	}
}
