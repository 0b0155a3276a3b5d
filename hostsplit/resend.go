package hostsplit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Re-sending archives to a repaired member.
//
// A member's frontier also holds URLs its peers sent it; once it
// acknowledged them the peers keep them only in their archive (see store).
// When the member's frontier is rebuilt (internal/crawl's Repair) those
// URLs may be gone, so the repair draws a resend token (RequestResend) that
// the member advertises in its status (NodeStatus.ResendToken). A peer that
// reads a token it has not served re-routes its whole archive for the
// member as KindURLs (the member's DUE drops what it knows), then records
// the token as served (Channel.ResendServed). Quiescent waits until every
// member served every other member's token, so the crawl cannot end before
// the re-sent batches are spooled, and the four-counter test then waits
// for them to be applied.
//
// The serving state is durable in the spool's metadata, per peer:
// resendServedMeta(id) holds the token, the spool's epoch and the peer's
// last sequence number when serving began (limit), and whether it is done. Re-sent batches are
// spooled under new sequence numbers (above limit) in the write that
// deletes their archived original, so a serve cut short by a crash resumes
// where it stopped, and never re-reads what it re-sent.

// resendTokenMeta names this node's own resend token in the spool's
// metadata.
const resendTokenMeta = "resend-token"

func resendServedMeta(id NodeID) string { return "resend-served/" + string(id) }

// resendPoll is how often a serve waiting for the peer's acknowledgements
// looks again.
const resendPoll = 100 * time.Millisecond

// errNotMember ends a serve for a node that left the view: its archive
// stays for ResendLost or DropArchive.
var errNotMember = errors.New("hostsplit: not a member of the current view")

// RequestResend draws a new resend token and stores it in the spool in
// dir, which must exist and not be in use: once the node runs again, every
// peer re-sends the batches it archived for it (see the file comment). A
// repair of the node's frontier calls it. The token is never zero.
func RequestResend(dir string) (uint64, error) {
	db, err := pebble.Open(dir, &pebble.Options{ErrorIfNotExists: true, Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
	if err != nil {
		return 0, fmt.Errorf("hostsplit: request resend: open spool %s: %w", dir, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	b[0] |= 1 // never zero
	err = db.Set(metaKey(resendTokenMeta), b[:], pebble.Sync)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("hostsplit: request resend: %w", err)
	}
	return binary.BigEndian.Uint64(b[:]), nil
}

// resendState is the durable state of serving one peer's token.
type resendState struct {
	token, epoch, limit uint64
	done                bool
}

func (rs resendState) encode() []byte {
	v := binary.BigEndian.AppendUint64(nil, rs.token)
	v = binary.BigEndian.AppendUint64(v, rs.epoch)
	v = binary.BigEndian.AppendUint64(v, rs.limit)
	if rs.done {
		return append(v, 1)
	}
	return append(v, 0)
}

func decodeResendState(v []byte) (resendState, bool) {
	if len(v) != 25 {
		return resendState{}, false
	}
	be := binary.BigEndian
	return resendState{token: be.Uint64(v), epoch: be.Uint64(v[8:]), limit: be.Uint64(v[16:]), done: v[24] == 1}, true
}

// resender serves the peers' resend tokens, one at a time, in a goroutine
// the Splitter owns.
type resender struct {
	s    *Splitter
	kick chan struct{} // capacity 1

	mu     sync.Mutex
	own    uint64            // this node's token (0: none)
	served map[NodeID]uint64 // tokens served, by peer
	wanted map[NodeID]uint64 // tokens seen and not served yet
}

// newResender loads the node's token and the serving state of every known
// peer: a serve begun and not done is wanted again.
func newResender(s *Splitter) (*resender, error) {
	r := &resender{s: s, kick: make(chan struct{}, 1), served: map[NodeID]uint64{}, wanted: map[NodeID]uint64{}}
	v, ok, err := s.spool.Meta(resendTokenMeta)
	if err != nil {
		return nil, err
	}
	if ok && len(v) == 8 {
		r.own = binary.BigEndian.Uint64(v)
	}
	for _, p := range s.tr.allPeers() {
		rs, err := r.state(p.id)
		if err != nil {
			return nil, err
		}
		switch {
		case rs.done:
			r.served[p.id] = rs.token
		case rs.token != 0:
			r.wanted[p.id] = rs.token
		}
	}
	return r, nil
}

func (r *resender) state(id NodeID) (resendState, error) {
	v, ok, err := r.s.spool.Meta(resendServedMeta(id))
	if err != nil || !ok {
		return resendState{}, err
	}
	rs, ok := decodeResendState(v)
	if !ok {
		return resendState{}, fmt.Errorf("hostsplit: resend state of %s corrupt", id)
	}
	return rs, nil
}

// asked records that peer id advertises token (from its status).
func (r *resender) asked(id NodeID, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token == 0 || r.served[id] == token || r.wanted[id] == token {
		return
	}
	r.wanted[id] = token
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// status returns this node's token, the tokens served by peer, and
// whether a token seen is not served yet (the node is not idle).
func (r *resender) status() (own uint64, served map[NodeID]uint64, busy bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.own, maps.Clone(r.served), len(r.wanted) > 0
}

// loop serves the wanted tokens until the Splitter closes; a failed serve
// is tried again after RetryMax.
func (r *resender) loop(ctx context.Context) {
	defer r.s.wg.Done()
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-retry.C:
		}
		r.mu.Lock()
		todo := maps.Clone(r.wanted)
		r.mu.Unlock()
		failed := false
		for id, token := range todo {
			err := r.serve(ctx, id, token)
			r.mu.Lock()
			switch {
			case err == nil:
				r.served[id] = token
				fallthrough
			case errors.Is(err, errNotMember):
				if r.wanted[id] == token {
					delete(r.wanted, id)
				}
			}
			r.mu.Unlock()
			if err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) && !errors.Is(err, errNotMember) {
				failed = true
				r.s.opts.Logger.Warn("hostsplit: re-sending the archive of a repaired peer", "peer", id, "err", err)
			}
		}
		if failed {
			retry.Reset(r.s.opts.RetryMax)
		}
	}
}

// serve re-routes the archive of id for its token and records the token
// served. It waits for id to acknowledge every batch spooled for it before
// the serve began: one applied before the repair and not yet known to be
// acknowledged would otherwise be archived after the pass that re-sends
// the archive.
func (r *resender) serve(ctx context.Context, id NodeID, token uint64) error {
	rs, err := r.state(id)
	if err != nil || (rs.token == token && rs.done) {
		return err
	}
	p, ok := r.s.tr.peerByID(id)
	if !ok {
		return errNotMember
	}
	// A limit drawn under another epoch numbers batches of a spool since
	// rebuilt: start again.
	if rs.token != token || rs.epoch != r.s.spool.epoch() {
		p.q.mu.Lock()
		rs = resendState{token: token, epoch: r.s.spool.epoch(), limit: p.q.lastSeq}
		p.q.mu.Unlock()
		if err := r.s.spool.SetMeta(resendServedMeta(id), rs.encode()); err != nil {
			return err
		}
	}
	var total uint64
	for {
		p.q.mu.Lock()
		acked := p.q.acked
		p.q.mu.Unlock()
		n, err := r.s.resendLive(ctx, id, rs.limit)
		total += n
		if err != nil {
			return err
		}
		if acked >= rs.limit {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(resendPoll):
		}
	}
	rs.done = true
	if err := r.s.spool.SetMeta(resendServedMeta(id), rs.encode()); err != nil {
		return err
	}
	r.s.opts.Logger.Info("hostsplit: re-sent the archive of a repaired peer", "peer", id, "urls", total)
	return nil
}

// resendLive re-routes, under the current view, the batches archived for
// id, a member, with a sequence number up to limit or from archiveBase
// (a rebuilt spool's): those in between were spooled by this serve. One
// chunk at a time under routeMu, so a membership change waits for a chunk
// only.
func (s *Splitter) resendLive(ctx context.Context, id NodeID, limit uint64) (total uint64, err error) {
	skip := seqRange{limit + 1, archiveBase}
	for from := uint64(0); ; {
		var n uint64
		var more bool
		err := s.underView(func(vs *viewState) error {
			if !vs.v.Has(id) {
				return errNotMember
			}
			var err error
			n, from, more, err = s.resendBatches(ctx, vs, id, from, skip)
			return err
		})
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}
