package crawl

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/logging"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
)

// ChangeMembership moves a running cluster from o.Old to o.New. It is a
// thin driver of the hand-off core (handoff.Step): it carries out the
// core's actions — Store calls, PREPARE/COMMIT/RESUME/ROLLBACK to the
// members over gRPC, status polls until drained, the fence wait — and feeds
// their outcomes back as events, with a tick every 5 polls.
//
// A change that has not committed by its deadline (o.Timeout) rolls back:
// members resume on o.Old, and ChangeMembership returns an error wrapping
// handoff.ErrTimeout; an interrupted ctx before the commit rolls back too.
// After the commit it only goes forward: if it fails then (ctx ends), run it
// again with the same views to finish it.
func ChangeMembership(ctx context.Context, o ChangeOptions) (ChangeReport, error) {
	var rep ChangeReport
	if o.TLS == nil {
		return rep, fmt.Errorf("%w: ChangeOptions.TLS is required", ErrInvalidOptions)
	}
	if o.New.Epoch == 0 {
		o.New.Epoch = o.Old.Epoch + 1
	}
	if o.New.Epoch <= o.Old.Epoch {
		return rep, fmt.Errorf("%w: new epoch %d not after %d", hostsplit.ErrStaleView, o.New.Epoch, o.Old.Epoch)
	}
	if o.Poll == 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
		if d, ok := ctx.Deadline(); ok {
			o.Timeout = time.Until(d) * 3 / 4
		}
	}
	if o.Timeout <= 0 {
		return rep, fmt.Errorf("%w: ChangeOptions.Timeout %v", ErrInvalidOptions, o.Timeout)
	}
	o.Logger = logging.OrDiscard(o.Logger)
	if o.ID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.ID = "change-" + hex.EncodeToString(b[:])
	}
	if o.Store == nil {
		o.Store = handoff.NewMemStore(o.Old)
	}
	rec := handoff.Record{ID: o.ID, Old: o.Old, New: o.New, Lost: o.Lost, Deadline: time.Now().Add(o.Timeout), Operator: certName(o.TLS)}
	parts := handoff.Participants(rec)
	rep.Epoch, rep.ParticipatingNodes = o.New.Epoch, len(parts)
	d := &changeDriver{o: o, rec: rec, parts: parts, conns: map[hostsplit.NodeID]*grpc.ClientConn{},
		view: hostsplit.ViewToProto(o.New), inflight: map[hostsplit.NodeID]handoff.Msg{},
		states: map[hostsplit.NodeID]*pb.MemberState{}, events: make(chan drvEvent, 64)}
	defer func() {
		for _, c := range d.conns {
			c.Close()
		}
	}()
	addrs := map[hostsplit.NodeID]string{}
	for _, m := range append(slices.Clone(o.New.Members), o.Old.Members...) {
		if _, ok := addrs[m.ID]; !ok {
			addrs[m.ID] = m.Addr
		}
	}
	known := func(id hostsplit.NodeID) bool { return slices.Contains(parts, id) }
	for _, id := range parts {
		cfg := o.TLS.ClientConfig(nil)
		cfg.VerifyConnection = knownVerifier(known)
		cfg.ServerName = string(id)
		c, err := grpc.NewClient(addrs[id], append([]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}, o.DialOptions...)...)
		if err != nil {
			return rep, fmt.Errorf("crawl: dial %s: %w", id, err)
		}
		d.conns[id] = c
	}
	start := time.Now()
	// A re-run after every node committed (RESUME started: only RESUME is
	// left to do, and PREPARE would not pause a node that resumed).
	if d.allCommitted(ctx) {
		o.Logger.Info("cluster: every node has committed already; RESUME", "epoch", o.New.Epoch)
		states, err := d.resumeAll(ctx)
		rep.Members, rep.Total = states, time.Since(start)
		if err == nil {
			err = finishRecord(ctx, o.Store, o.New.Epoch)
		}
		return rep, err
	}
	// A re-run of a change the Store has committed (its coordinator
	// stopped after the commit): only forward.
	if r, ok, err := o.Store.Current(ctx); err == nil && ok && r.New.Epoch == o.New.Epoch &&
		(r.Phase == handoff.PhaseCommitting || r.Phase == handoff.PhaseResuming) {
		o.Logger.Info("cluster: change found in the store; COMMIT, then RESUME", "epoch", o.New.Epoch, "change", r.ID, "phase", r.Phase)
		d.rec.Lost = r.Lost
		states, err := d.forward(ctx)
		rep.Members, rep.Total = states, time.Since(start)
		if err == nil {
			err = finishRecord(ctx, o.Store, o.New.Epoch)
		}
		return rep, err
	}
	err := d.run(ctx, &rep)
	rep.Total = time.Since(start)
	return rep, err
}

// forward finishes a committed change: COMMIT to every participant (a
// repeated COMMIT is a no-op), every hand-off applied, then RESUME.
func (d *changeDriver) forward(ctx context.Context) ([]*pb.MemberState, error) {
	req := &pb.TransitionRequest{Phase: pb.TransitionRequest_PHASE_COMMIT, View: d.view, Lost: nodeIDStrings(d.rec.Lost), ChangeId: d.rec.ID}
	if _, err := d.transitionAll(ctx, req); err != nil {
		return nil, err
	}
	for {
		r1, _, err := d.statusRound(ctx)
		if err == nil {
			var r2 []hostsplit.NodeStatus
			if r2, _, err = d.statusRound(ctx); err == nil {
				err = hostsplit.Drained(r1, r2)
				for _, ns := range r2 {
					if err == nil && ns.Epoch != d.rec.New.Epoch {
						err = fmt.Errorf("%s is on epoch %d", ns.Node, ns.Epoch)
					}
				}
			}
		}
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("crawl: waiting for the hand-offs of epoch %d: %w", d.rec.New.Epoch, errors.Join(err, ctx.Err()))
		case <-time.After(d.o.Poll):
		}
	}
	return d.resumeAll(ctx)
}

// finishRecord ends, in store, a committed change to epoch that a
// coordinator which stopped after the commit left open (a re-run found
// every member committed): without it the next change would be refused
// (handoff.ErrBusy).
func finishRecord(ctx context.Context, store handoff.Store, epoch uint64) error {
	r, ok, err := store.Current(ctx)
	if err != nil {
		return fmt.Errorf("crawl: reading the change record: %w", err)
	}
	if !ok || r.New.Epoch != epoch {
		return nil
	}
	if r.Phase == handoff.PhaseCommitting {
		if r, err = store.Advance(ctx, r, handoff.PhaseResuming); err != nil {
			return fmt.Errorf("crawl: recording change %s resumed: %w", r.ID, err)
		}
	}
	if r.Phase == handoff.PhaseResuming {
		if _, err = store.Advance(ctx, r, handoff.PhaseDone); err != nil {
			return fmt.Errorf("crawl: recording change %s done: %w", r.ID, err)
		}
	}
	return nil
}

// certName is the common name of the caller's certificate (the operator).
func certName(tn *tlsutil.Node) string {
	if len(tn.Cert.Certificate) == 0 {
		return ""
	}
	c, err := x509.ParseCertificate(tn.Cert.Certificate[0])
	if err != nil {
		return ""
	}
	return c.Subject.CommonName
}

// drvEvent is an event for the core, from a goroutine of the driver.
type drvEvent struct {
	ev       handoff.Event
	sendDone bool            // a send to ev.Member of msg finished
	msg      handoff.Msg     // the message sent
	state    *pb.MemberState // its reply
	refused  error           // a member refused the change for good
}

type changeDriver struct {
	o      ChangeOptions
	rec    handoff.Record
	parts  []hostsplit.NodeID
	conns  map[hostsplit.NodeID]*grpc.ClientConn
	view   *pb.View
	events chan drvEvent
	wg     sync.WaitGroup
	// Owned by run's goroutine:
	inflight   map[hostsplit.NodeID]handoff.Msg
	states     map[hostsplit.NodeID]*pb.MemberState // RESUME replies
	pollCancel context.CancelFunc
	refused    error
}

var msgPhase = map[handoff.Msg]pb.TransitionRequest_Phase{
	handoff.MsgPrepare: pb.TransitionRequest_PHASE_PREPARE, handoff.MsgCommit: pb.TransitionRequest_PHASE_COMMIT,
	handoff.MsgResume: pb.TransitionRequest_PHASE_RESUME, handoff.MsgRollback: pb.TransitionRequest_PHASE_ROLLBACK,
}

// rollbackBound is how long ROLLBACKs and the abort's Store write may take
// once the change's context has ended.
const rollbackBound = 10 * time.Second

func (d *changeDriver) run(ctx context.Context, rep *ChangeReport) error {
	// Goroutines end with bg; ROLLBACK and the abort's Store write outlive
	// ctx (bounded by rollbackBound).
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		stop()
		d.wg.Wait()
	}()
	state := handoff.NewState(d.o.Old, d.o.Removed)
	queue := []drvEvent{{ev: handoff.Event{Kind: handoff.EvBegin, Rec: d.rec}}}
	tick := time.NewTicker(5 * d.o.Poll)
	defer tick.Stop()
	ctxDone := ctx.Done()
	start, cstart := time.Now(), time.Time{}
	var report *handoff.Action
	var ended time.Time
	for {
		var de drvEvent
		if len(queue) > 0 {
			de, queue = queue[0], queue[1:]
		} else {
			var endc <-chan time.Time
			if report != nil {
				endc = time.After(time.Until(ended.Add(rollbackBound)))
			}
			select {
			case de = <-d.events:
			case now := <-tick.C:
				de.ev = handoff.Event{Kind: handoff.EvTick, Now: now}
			case <-ctxDone:
				ctxDone = nil
				de.ev = handoff.Event{Kind: handoff.EvAbort, Operator: fmt.Sprintf("the coordinator (%v)", ctx.Err())}
			case <-endc:
				return d.finish(report, rep)
			}
		}
		if de.sendDone && d.inflight[de.ev.Member] == de.msg {
			delete(d.inflight, de.ev.Member)
		}
		if de.refused != nil && d.refused == nil {
			d.refused = de.refused
		}
		if de.ev.Kind == handoff.EvAck && de.ev.Msg == handoff.MsgResume {
			d.states[de.ev.Member] = de.state
		}
		if de.ev.Kind == "" {
			continue
		}
		var acts []handoff.Action
		state, acts = handoff.Step(state, de.ev)
		for _, a := range acts {
			switch a.Kind {
			case handoff.ActStore:
				switch {
				case a.Op == handoff.OpCommit:
					rep.Prepare, cstart = time.Since(start), time.Now()
					d.o.Logger.Info("cluster: drained; COMMIT", "epoch", d.rec.New.Epoch, "after", rep.Prepare.Round(time.Millisecond))
				case a.Op == handoff.OpAdvance && a.To == handoff.PhaseResuming:
					rep.Commit = time.Since(cstart)
					d.o.Logger.Info("cluster: hand-offs applied; RESUME", "epoch", d.rec.New.Epoch, "after", rep.Commit.Round(time.Millisecond))
				case a.Op == handoff.OpBegin:
					d.o.Logger.Info("cluster: PREPARE", "epoch", d.rec.New.Epoch, "nodes", len(d.parts), "change", d.rec.ID,
						"deadline", d.rec.Deadline.UTC().Format(time.RFC3339))
				case a.Op == handoff.OpAdvance && a.To == handoff.PhaseAborted:
					d.o.Logger.Warn("cluster: rolling back", "epoch", d.rec.New.Epoch, "reason", a.Rec.Reason)
				}
				queue = append(queue, d.doStore(bg, a))
			case handoff.ActSend:
				if d.inflight[a.Member] == a.Msg {
					continue // still trying
				}
				d.inflight[a.Member] = a.Msg
				d.send(ctx, bg, a)
			case handoff.ActPollDrained:
				d.poll(ctx, a.Epoch)
			case handoff.ActWaitFence:
				d.o.Logger.Info("cluster: waiting for the removed members' leases to expire", "epoch", d.rec.New.Epoch, "ttl", a.TTL)
				d.after(bg, a.TTL, handoff.Event{Kind: handoff.EvFenceWaited, ChangeID: d.rec.ID})
			case handoff.ActWarn, handoff.ActRefuse:
				d.o.Logger.Warn("cluster: change failed", "err", a.Err)
			case handoff.ActReport:
				if report != nil {
					// The change has its outcome; a later abort (the
					// context ending during ROLLBACK) finds none open.
					continue
				}
				report, ended = &a, time.Now()
				if d.pollCancel != nil {
					d.pollCancel()
				}
			}
		}
		if report != nil && len(d.inflight) == 0 {
			return d.finish(report, rep)
		}
		if ctxDone == nil && report == nil && !state.Change.Phase.Open() {
			return fmt.Errorf("crawl: membership change %s: %w", d.rec.ID, ctx.Err())
		}
		if ctxDone == nil && report == nil && (state.Change.Phase == handoff.PhaseCommitting || state.Change.Phase == handoff.PhaseResuming) {
			return fmt.Errorf("crawl: membership change %s interrupted: %w: %w", d.rec.ID, handoff.ErrCommitted, ctx.Err())
		}
	}
}

// finish turns the core's report into ChangeMembership's result.
func (d *changeDriver) finish(a *handoff.Action, rep *ChangeReport) error {
	if a.Err != nil {
		err := fmt.Errorf("crawl: membership change %s to epoch %d: %w", d.rec.ID, d.rec.New.Epoch, a.Err)
		if d.refused != nil {
			err = fmt.Errorf("%w: %w", err, d.refused)
		}
		if len(d.inflight) > 0 {
			var ids []hostsplit.NodeID
			for id := range d.inflight {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			err = fmt.Errorf("%w (no ROLLBACK answer from %v: they roll back by themselves %v after the deadline)", err, ids, SelfRollbackGrace)
		}
		return err
	}
	for _, id := range d.parts {
		if st := d.states[id]; st != nil {
			rep.Members = append(rep.Members, st)
		}
	}
	sumHandoffs(rep, d.rec.New.Epoch)
	return nil
}

func sumHandoffs(rep *ChangeReport, epoch uint64) {
	for _, st := range rep.Members {
		h := st.GetHandoff()
		if h.GetEpoch() != epoch {
			continue
		}
		rep.HandoffHosts += int(h.GetHosts())
		rep.HandoffQueued += int(h.GetQueuedUrls())
		rep.HandoffSeen += int(h.GetSeenUrls())
		rep.HandoffBatches += h.GetBatches()
		rep.HandoffWireBytes += h.GetWireBytes()
		rep.HandoffRawBytes += h.GetRawBytes()
		rep.MaxHandoff = max(rep.MaxHandoff, time.Duration(h.GetDurationNs()))
	}
}

// emit hands an event to run's loop unless the driver is ending.
func (d *changeDriver) emit(bg context.Context, de drvEvent) {
	select {
	case d.events <- de:
	case <-bg.Done():
	}
}

func (d *changeDriver) doStore(bg context.Context, a handoff.Action) drvEvent {
	ctx, cancel := context.WithTimeout(bg, rollbackBound)
	defer cancel()
	var r handoff.Record
	var ttl time.Duration
	var err error
	switch a.Op {
	case handoff.OpBegin:
		r, err = d.o.Store.Begin(ctx, a.Rec)
	case handoff.OpAdvance:
		r, err = d.o.Store.Advance(ctx, a.Rec, a.To)
	case handoff.OpFence:
		r = a.Rec
		ttl, err = d.o.Store.Fence(ctx, a.Rec)
	case handoff.OpCommit:
		r, err = d.o.Store.Commit(ctx, a.Rec)
	}
	if err != nil {
		d.o.Logger.Warn("cluster: store operation failed", "op", a.Op, "err", err)
		return drvEvent{ev: handoff.Event{Kind: handoff.EvStoreFailed, Op: a.Op, Err: err}}
	}
	return drvEvent{ev: handoff.Event{Kind: handoff.EvStored, Op: a.Op, Rec: r, TTL: ttl}}
}

// send carries one message to one member; ROLLBACK outlives ctx.
func (d *changeDriver) send(ctx, bg context.Context, a handoff.Action) {
	req := &pb.TransitionRequest{Phase: msgPhase[a.Msg], View: d.view, Lost: nodeIDStrings(d.rec.Lost), ChangeId: d.rec.ID}
	var cctx context.Context
	var cancel context.CancelFunc
	switch a.Msg {
	case handoff.MsgPrepare:
		req.DeadlineUnixNano = d.rec.Deadline.UnixNano()
		cctx, cancel = context.WithDeadline(ctx, d.rec.Deadline)
	case handoff.MsgRollback:
		cctx, cancel = context.WithTimeout(bg, rollbackBound)
	default:
		cctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		st, err := pb.NewMembershipClient(d.conns[a.Member]).Transition(cctx, req)
		de := drvEvent{sendDone: true, msg: a.Msg, state: st}
		switch {
		case err == nil:
			de.ev = handoff.Event{Kind: handoff.EvAck, Member: a.Member, Msg: a.Msg, ChangeID: d.rec.ID, Epoch: d.rec.New.Epoch}
		case isRemovedRefusal(err):
			d.o.Logger.Warn("cluster: phase refused", "phase", req.GetPhase(), "member", a.Member, "err", err)
			de.refused = fmt.Errorf("%w: %s: %v", handoff.ErrRemoved, a.Member, err)
			de.ev = handoff.Event{Kind: handoff.EvAbort, Operator: fmt.Sprintf("the refusal of %s (a removed node id)", a.Member)}
		default:
			d.o.Logger.Warn("cluster: phase failed; retrying", "phase", req.GetPhase(), "member", a.Member, "err", err)
			de.ev = handoff.Event{Kind: handoff.EvUnreachable, Member: a.Member, Err: err}
		}
		d.emit(bg, de)
	}()
}

func (d *changeDriver) after(bg context.Context, wait time.Duration, e handoff.Event) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		select {
		case <-time.After(wait):
			d.emit(bg, drvEvent{ev: e})
		case <-bg.Done():
		}
	}()
}
