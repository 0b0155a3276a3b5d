package handoff

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// The hand-off core: one membership change as its coordinator sees it, as a
// pure function Step(state, event) -> (state, actions), after raft's
// confchange and RawNode. It does no I/O and reads no clock: store results,
// member replies and the time arrive as events, and what must be done next
// leaves as actions that a driver (internal/crawl's ChangeMembership) carries
// out, feeding each outcome back as an event.
//
// Rules it enforces:
//   - one change at a time (ErrBusy);
//   - a change that has not committed by its deadline rolls back: the Store
//     records it aborted, members get ROLLBACK and fetch on the old view;
//   - from commit on a change only goes forward (abort: ErrCommitted);
//   - members lost with their disk are fenced (Store.Fence, then the
//     returned TTL waited) before the commit and are never contacted;
//   - a removed id may not come back (ErrRemoved).

// More sentinel errors of the core (reported in ActReport / ActRefuse).
var (
	// ErrTimeout: the change did not commit by its deadline and was rolled back.
	ErrTimeout = errors.New("handoff: the change did not commit by its deadline; rolled back to the old view")
	// ErrAborted: an operator aborted the change before it committed.
	ErrAborted = errors.New("handoff: the change was aborted; members resume on the old view")
	// ErrCommitted: the change has committed; it can only go forward.
	ErrCommitted = errors.New("handoff: the change has committed and can only go forward (run it again to finish it)")
	// ErrNoChange: there is no change in progress to act on.
	ErrNoChange = errors.New("handoff: no membership change in progress")
	// ErrInvalid: the change asked for is not a valid one.
	ErrInvalid = errors.New("handoff: invalid membership change")
)

// Step applies e to s and returns the new state and what to do.
func Step(s State, e Event) (State, []Action) {
	s = s.clone()
	var acts []Action
	emit := func(a Action) { acts = append(acts, a) }
	st := stepper{s: &s, emit: emit}
	switch e.Kind {
	case EvBegin:
		st.begin(e)
	case EvStored:
		st.stored(e)
	case EvStoreFailed:
		st.storeFailed(e)
	case EvAck:
		st.ack(e)
	case EvDrained:
		if st.current(e.ChangeID) && s.Change.Phase.beforeCommit() {
			if !st.allAcked(MsgPrepare) {
				// Drained before every member paused: poll again.
				emit(Action{Kind: ActPollDrained, Rec: s.Change})
				break
			}
			s.Drained = true
			st.maybeCommit()
		}
	case EvFenceWaited:
		if st.current(e.ChangeID) && s.Change.Phase == PhaseFencing && s.Pending.Op == "" {
			s.FenceWaited = true
			for _, id := range dropped(s.Change) {
				delete(s.Fetching, id) // fenced: stopped within its lease TTL
			}
			st.maybeCommit()
		}
	case EvApplied:
		if st.current(e.ChangeID) && s.Change.Phase == PhaseCommitting && s.Pending.Op == "" {
			if !st.allAcked(MsgCommit) {
				// Applied before every member committed: poll again.
				emit(Action{Kind: ActPollDrained, Epoch: s.Change.New.Epoch, Rec: s.Change})
				break
			}
			st.store(OpAdvance, PhaseResuming)
		}
	case EvRestarted:
		st.restarted(e)
	case EvUnreachable:
		if s.Change.Phase.Open() {
			err := e.Err
			if err == nil {
				err = errors.New("no answer")
			}
			emit(Action{Kind: ActWarn, Member: e.Member, Err: fmt.Errorf("handoff: %s unreachable in phase %s: %w", e.Member, s.Change.Phase, err)})
		}
	case EvTick:
		st.tick(e.Now)
	case EvAbort:
		st.abortByOperator(e.Operator)
	case EvContact:
		if slices.Contains(s.Removed, e.Member) {
			emit(Action{Kind: ActRefuse, Member: e.Member, Err: fmt.Errorf("%w: %s", ErrRemoved, e.Member)})
		}
	}
	return s, acts
}

func (p Phase) beforeCommit() bool { return p == PhasePreparing || p == PhaseFencing }

type stepper struct {
	s    *State
	emit func(Action)
}

// current reports whether an event naming change id is about the open change.
func (st stepper) current(id string) bool {
	return st.s.Change.Phase.Open() && (id == "" || id == st.s.Change.ID)
}

func (st stepper) store(op Op, to Phase) {
	st.s.Pending.Op, st.s.Pending.To = op, to
	st.emit(Action{Kind: ActStore, Op: op, To: to, Rec: st.s.Change})
}

func (st stepper) sendAll(msg Msg) {
	for _, id := range Participants(st.s.Change) {
		st.emit(Action{Kind: ActSend, Member: id, Msg: msg, Rec: st.s.Change})
	}
}

func (st stepper) report(err error) {
	if !st.s.reported {
		st.s.reported = true
		st.emit(Action{Kind: ActReport, Err: err, Rec: st.s.Change})
	}
}

func (st stepper) allAcked(msg Msg) bool {
	for _, id := range Participants(st.s.Change) {
		if st.s.Acks[id] != msg {
			return false
		}
	}
	return true
}

func (st stepper) begin(e Event) {
	s, r := st.s, e.Rec
	fail := func(err error) { st.emit(Action{Kind: ActReport, Err: err, Rec: r}) }
	if s.Change.Phase.Open() {
		fail(fmt.Errorf("%w: %s (%s)", ErrBusy, s.Change.ID, s.Change.Phase))
		return
	}
	if r.New.Epoch == 0 {
		r.New.Epoch = r.Old.Epoch + 1
	}
	switch {
	case r.Old.Epoch != s.View.Epoch || !slices.Equal(r.Old.IDs(), s.View.IDs()):
		fail(fmt.Errorf("%w: change from epoch %d, the cluster is on %d", ErrStale, r.Old.Epoch, s.View.Epoch))
		return
	case r.New.Epoch <= r.Old.Epoch:
		fail(fmt.Errorf("%w: new epoch %d not after %d", ErrStale, r.New.Epoch, r.Old.Epoch))
		return
	case len(r.New.Members) == 0:
		fail(fmt.Errorf("%w: the new view has no members", ErrInvalid))
		return
	case r.Deadline.IsZero():
		fail(fmt.Errorf("%w: no deadline", ErrInvalid))
		return
	}
	for _, m := range r.New.Members {
		if slices.Contains(s.Removed, m.ID) {
			fail(fmt.Errorf("%w: %s (add it under a new id)", ErrRemoved, m.ID))
			return
		}
	}
	for _, id := range r.Lost {
		if !r.Old.Has(id) || r.New.Has(id) {
			fail(fmt.Errorf("%w: lost member %s must be in the old view and not in the new one", ErrInvalid, id))
			return
		}
	}
	r.Phase, r.Reason = PhasePreparing, ""
	s.Change, s.Acks, s.Drained, s.FenceWaited, s.reported = r, map[hostsplit.NodeID]Msg{}, false, false, false
	st.store(OpBegin, PhasePreparing)
}

func (st stepper) stored(e Event) {
	s := st.s
	if !s.Change.Phase.Open() && s.Pending.To != PhaseAborted {
		return
	}
	if e.Op != s.Pending.Op || (e.Op == OpAdvance && e.Rec.Phase != s.Pending.To) {
		return // a late or duplicated result
	}
	to := s.Pending.To
	s.Pending.Op, s.Pending.To = "", ""
	s.Change.Rev = e.Rec.Rev
	switch e.Op {
	case OpBegin:
		st.sendAll(MsgPrepare)
		st.emit(Action{Kind: ActPollDrained, Rec: s.Change})
	case OpFence:
		st.emit(Action{Kind: ActWaitFence, TTL: e.TTL, Rec: s.Change})
	case OpCommit:
		s.Change.Phase = PhaseCommitting
		s.View = s.Change.New
		st.sendAll(MsgCommit)
		st.emit(Action{Kind: ActPollDrained, Epoch: s.Change.New.Epoch, Rec: s.Change})
	case OpAdvance:
		s.Change.Phase = to
		switch to {
		case PhaseFencing:
			st.store(OpFence, PhaseFencing)
		case PhaseResuming:
			st.sendAll(MsgResume)
		case PhaseDone:
			for _, id := range dropped(s.Change) {
				if !slices.Contains(s.Removed, id) {
					s.Removed = append(s.Removed, id)
				}
			}
			st.report(nil)
		case PhaseAborted:
			st.sendAll(MsgRollback)
			st.report(abortErr(s.Change))
		}
	}
}

func abortErr(r Record) error {
	if r.Reason == reasonTimeout {
		return ErrTimeout
	}
	return fmt.Errorf("%w (%s)", ErrAborted, r.Reason)
}

const reasonTimeout = "deadline passed before commit"

func (st stepper) storeFailed(e Event) {
	s := st.s
	if e.Op != s.Pending.Op {
		return
	}
	to := s.Pending.To
	s.Pending.Op, s.Pending.To = "", ""
	switch {
	case e.Op == OpBegin:
		// Nothing was sent: the change never began.
		s.Change.Phase, s.Change.Reason = PhaseAborted, e.Err.Error()
		st.report(fmt.Errorf("handoff: recording the change: %w", e.Err))
	case to == PhaseAborted:
		// The rollback could not be recorded: roll the members back anyway
		// (the record stays open; an operator's abort or the deadline
		// ends it) and say so.
		s.Change.Phase = PhaseAborted
		st.sendAll(MsgRollback)
		st.report(errors.Join(abortErr(s.Change), fmt.Errorf("handoff: recording the abort: %w", e.Err)))
	case s.Change.Phase.beforeCommit():
		st.abort("store " + string(e.Op) + " failed: " + e.Err.Error())
	default:
		// Committed: only forward. Retry at the next tick.
		s.Pending.Op, s.Pending.To = e.Op, to
		st.emit(Action{Kind: ActWarn, Err: fmt.Errorf("handoff: store %s failed (retrying): %w", e.Op, e.Err)})
	}
}

func (st stepper) ack(e Event) {
	s := st.s
	if slices.Contains(s.Removed, e.Member) && !slices.Contains(Participants(s.Change), e.Member) {
		st.emit(Action{Kind: ActRefuse, Member: e.Member, Err: fmt.Errorf("%w: %s", ErrRemoved, e.Member)})
		return
	}
	if s.Change.Phase == "" || (e.ChangeID != "" && e.ChangeID != s.Change.ID) || e.Epoch != s.Change.New.Epoch ||
		!slices.Contains(Participants(s.Change), e.Member) {
		return // stale: another change, or not a party to this one
	}
	want := map[Phase]Msg{PhasePreparing: MsgPrepare, PhaseFencing: MsgPrepare, PhaseCommitting: MsgCommit,
		PhaseResuming: MsgResume, PhaseAborted: MsgRollback, PhaseDone: MsgResume}[s.Change.Phase]
	if e.Msg != want {
		return // late: an earlier phase's reply
	}
	s.Acks[e.Member] = e.Msg
	switch e.Msg {
	case MsgPrepare:
		delete(s.Fetching, e.Member)
	case MsgResume:
		if s.Change.New.Has(e.Member) {
			s.Fetching[e.Member] = s.Change.New.Epoch
		}
		if s.Change.Phase == PhaseResuming && s.Pending.Op == "" && st.allAcked(MsgResume) {
			st.store(OpAdvance, PhaseDone)
		}
	case MsgRollback:
		if s.Change.Old.Has(e.Member) {
			s.Fetching[e.Member] = s.Change.Old.Epoch
		}
	}
}

// maybeCommit commits once every participant is paused and drained and the
// dropped members are fenced.
func (st stepper) maybeCommit() {
	s := st.s
	if !s.Change.Phase.beforeCommit() || s.Pending.Op != "" || !s.Drained || !st.allAcked(MsgPrepare) {
		return
	}
	if len(dropped(s.Change)) > 0 && !s.FenceWaited {
		if s.Change.Phase == PhasePreparing {
			st.store(OpAdvance, PhaseFencing)
		}
		return
	}
	st.store(OpCommit, PhaseCommitting)
}

func (st stepper) restarted(e Event) {
	s := st.s
	if slices.Contains(s.Removed, e.Member) {
		st.emit(Action{Kind: ActRefuse, Member: e.Member, Err: fmt.Errorf("%w: %s", ErrRemoved, e.Member)})
		return
	}
	if s.Change.Phase.Open() && slices.Contains(s.Change.Lost, e.Member) {
		// Declared lost: never contacted. Once fenced it cannot fetch.
		err := fmt.Errorf("%w: %s was declared lost by change %s", ErrRemoved, e.Member, s.Change.ID)
		if !s.FenceWaited && e.MemberPhase == "running" {
			s.Fetching[e.Member] = e.Epoch
			err = fmt.Errorf("handoff: %s was declared lost but is alive; it is fenced before the commit", e.Member)
		}
		st.emit(Action{Kind: ActRefuse, Member: e.Member, Err: err})
		return
	}
	if e.MemberPhase == "running" {
		s.Fetching[e.Member] = e.Epoch
	} else {
		delete(s.Fetching, e.Member)
	}
	if !slices.Contains(Participants(s.Change), e.Member) {
		return
	}
	send := func(m Msg) { st.emit(Action{Kind: ActSend, Member: e.Member, Msg: m, Rec: s.Change}) }
	switch p := s.Change.Phase; {
	case p.beforeCommit():
		// It may have resumed (rolled back by itself): pause and drain again.
		delete(s.Acks, e.Member)
		s.Drained = false
		send(MsgPrepare)
		st.emit(Action{Kind: ActPollDrained, Rec: s.Change})
	case p == PhaseCommitting, (p == PhaseResuming || p == PhaseDone) && e.Epoch < s.Change.New.Epoch:
		delete(s.Acks, e.Member)
		send(MsgCommit)
		if p != PhaseCommitting {
			send(MsgResume)
		}
	case p == PhaseResuming || p == PhaseDone:
		if e.MemberPhase != "running" {
			send(MsgResume)
		}
	case p == PhaseAborted:
		if e.MemberPhase == "prepared" || e.MemberPhase == "joining" {
			send(MsgRollback)
		}
	}
}

func (st stepper) tick(now time.Time) {
	s := st.s
	if !s.Change.Phase.Open() {
		return
	}
	if s.Change.Phase.beforeCommit() && !now.Before(s.Change.Deadline) {
		if s.Pending.Op == OpCommit {
			return // the Store decides: a commit after the deadline is refused there
		}
		st.abort(reasonTimeout)
		return
	}
	// Retry what is unanswered.
	want := map[Phase]Msg{PhasePreparing: MsgPrepare, PhaseFencing: MsgPrepare, PhaseCommitting: MsgCommit, PhaseResuming: MsgResume}[s.Change.Phase]
	for _, id := range Participants(s.Change) {
		if s.Acks[id] != want && (s.Pending.Op == "" || s.Change.Phase != PhasePreparing) {
			st.emit(Action{Kind: ActSend, Member: id, Msg: want, Rec: s.Change})
		}
	}
	if !s.Change.Phase.beforeCommit() && s.Pending.Op != "" {
		st.emit(Action{Kind: ActStore, Op: s.Pending.Op, To: s.Pending.To, Rec: s.Change})
	}
}

func (st stepper) abortByOperator(op string) {
	s := st.s
	switch {
	case !s.Change.Phase.Open():
		st.emit(Action{Kind: ActReport, Err: ErrNoChange})
	case !s.Change.Phase.beforeCommit():
		st.emit(Action{Kind: ActWarn, Err: fmt.Errorf("%w: %s is %s", ErrCommitted, s.Change.ID, s.Change.Phase)})
	case s.Pending.Op == OpCommit:
		st.emit(Action{Kind: ActWarn, Err: fmt.Errorf("%w: %s is committing now; try again", ErrBusy, s.Change.ID)})
	default:
		if op == "" {
			op = "an operator"
		}
		st.abort("aborted by " + op)
	}
}

// abort rolls the open change back: the Store records it aborted, then
// the members get ROLLBACK.
func (st stepper) abort(reason string) {
	st.s.Change.Reason = reason
	st.store(OpAdvance, PhaseAborted)
}
