package handoff

import (
	"fmt"
	"slices"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// The inputs, outputs and state of Step (step.go).

// Msg is a message the coordinator sends to a member.
type Msg string

// Messages to members (the Membership service's phases).
const (
	MsgPrepare  Msg = "prepare"
	MsgCommit   Msg = "commit"
	MsgResume   Msg = "resume"
	MsgRollback Msg = "rollback"
)

// Op is a Store operation.
type Op string

// Store operations.
const (
	OpBegin   Op = "begin"
	OpAdvance Op = "advance"
	OpFence   Op = "fence"
	OpCommit  Op = "commit"
)

// EventKind says what happened.
type EventKind string

// Events.
const (
	// EvBegin: an operator asks for Rec (Old, New, Lost, Deadline, ID).
	EvBegin EventKind = "begin"
	// EvStored: the Store operation Op succeeded; Rec as stored, TTL (Fence).
	EvStored EventKind = "stored"
	// EvStoreFailed: the Store operation Op failed with Err.
	EvStoreFailed EventKind = "store-failed"
	// EvAck: Member did Msg for change ChangeID (new epoch Epoch).
	EvAck EventKind = "ack"
	// EvDrained: after PREPARE, two status rounds found nothing in flight.
	EvDrained EventKind = "drained"
	// EvFenceWaited: the fence TTL has passed.
	EvFenceWaited EventKind = "fence-waited"
	// EvApplied: after COMMIT, every member is on the new epoch and every
	// hand-off batch is applied.
	EvApplied EventKind = "applied"
	// EvRestarted: Member was seen again in its persisted MemberPhase at
	// Epoch (a crash and restart, or a reconnect after a partition).
	EvRestarted EventKind = "restarted"
	// EvUnreachable: a message to Member failed (refused, timed out).
	EvUnreachable EventKind = "unreachable"
	// EvTick: the time is Now.
	EvTick EventKind = "tick"
	// EvAbort: Operator asks to roll the change back.
	EvAbort EventKind = "abort"
	// EvContact: Member called the coordinator or a member (is it welcome?).
	EvContact EventKind = "contact"
)

// Event is one input of Step.
type Event struct {
	Kind        EventKind
	Now         time.Time // EvTick
	Rec         Record    // EvBegin: the change; EvStored: the record as stored
	Op          Op        // EvStored, EvStoreFailed
	TTL         time.Duration
	Err         error
	ChangeID    string // EvAck, EvDrained, EvApplied, EvFenceWaited: "" = the current change
	Epoch       uint64 // EvAck: the change's new epoch; EvRestarted: the member's view epoch
	Member      hostsplit.NodeID
	Msg         Msg
	MemberPhase string // EvRestarted: "running", "prepared", "committed", "removed", "joining"
	Operator    string // EvAbort
}

// ActionKind says what the driver must do.
type ActionKind string

// Actions.
const (
	// ActStore: run Store operation Op on Rec (OpAdvance: to To), then
	// feed EvStored or EvStoreFailed.
	ActStore ActionKind = "store"
	// ActSend: send Msg for Rec to Member, then feed EvAck or EvUnreachable.
	ActSend ActionKind = "send"
	// ActWaitFence: wait TTL, then feed EvFenceWaited.
	ActWaitFence ActionKind = "wait-fence"
	// ActPollDrained: poll member status until drained, then feed EvDrained
	// (Epoch 0, after PREPARE) or EvApplied (Epoch = the new epoch).
	ActPollDrained ActionKind = "poll-drained"
	// ActReport: the change ended: Err nil (done) or why not.
	ActReport ActionKind = "report"
	// ActRefuse: refuse Member with Err (a removed id came back).
	ActRefuse ActionKind = "refuse"
	// ActWarn: something the operator should know; the change goes on.
	ActWarn ActionKind = "warn"
)

// Action is one output of Step.
type Action struct {
	Kind   ActionKind
	Op     Op
	To     Phase // ActStore OpAdvance
	Rec    Record
	Member hostsplit.NodeID
	Msg    Msg
	TTL    time.Duration
	Epoch  uint64
	Err    error
}

func (a Action) String() string {
	switch a.Kind {
	case ActStore:
		if a.Op == OpAdvance {
			return fmt.Sprintf("store %s %s -> %s", a.Op, a.Rec.ID, a.To)
		}
		return fmt.Sprintf("store %s %s", a.Op, a.Rec.ID)
	case ActSend:
		return fmt.Sprintf("send %s %s epoch %d", a.Member, a.Msg, a.Rec.New.Epoch)
	case ActWaitFence:
		return fmt.Sprintf("wait-fence %v", a.TTL)
	case ActPollDrained:
		return fmt.Sprintf("poll-drained epoch %d", a.Epoch)
	case ActRefuse:
		return fmt.Sprintf("refuse %s: %v", a.Member, a.Err)
	case ActReport:
		if a.Err == nil {
			return "report done"
		}
		return fmt.Sprintf("report error: %v", a.Err)
	default:
		return fmt.Sprintf("%s: %v", a.Kind, a.Err)
	}
}

// State is what the coordinator knows. Step never modifies the State it is
// given (it copies); the zero State plus View is a cluster with no change.
type State struct {
	// View is the cluster's committed view.
	View hostsplit.View
	// Removed are the ids removed for good.
	Removed []hostsplit.NodeID
	// Change is the current or last change (Phase "" if none yet).
	Change Record
	// Pending is the Store operation awaited (Op "" if none).
	Pending struct {
		Op Op
		To Phase
	}
	// Acks is the last message each participant acknowledged in Change.
	Acks map[hostsplit.NodeID]Msg
	// Drained: after PREPARE, nothing was in flight (reset by a restart).
	Drained bool
	// FenceWaited: the Lost members are fenced and their TTL has passed.
	FenceWaited bool
	// Fetching holds, for each member the core believes fetching, the
	// epoch of the view it fetches under: every member of View at first;
	// one that acked PREPARE stops; RESUME and ROLLBACK start it again.
	// Fenced members stop once their TTL has passed.
	Fetching map[hostsplit.NodeID]uint64
	// reported: ActReport was emitted for Change.
	reported bool
}

// NewState is the state of a cluster on view v with no change in progress.
func NewState(v hostsplit.View, removed []hostsplit.NodeID) State {
	s := State{View: v, Removed: slices.Clone(removed), Fetching: map[hostsplit.NodeID]uint64{}}
	for _, m := range v.Members {
		s.Fetching[m.ID] = v.Epoch
	}
	return s
}

func (s State) clone() State {
	c := s
	c.View.Members = slices.Clone(s.View.Members)
	c.Removed = slices.Clone(s.Removed)
	c.Acks = make(map[hostsplit.NodeID]Msg, len(s.Acks))
	for k, v := range s.Acks {
		c.Acks[k] = v
	}
	c.Fetching = make(map[hostsplit.NodeID]uint64, len(s.Fetching))
	for k, v := range s.Fetching {
		c.Fetching[k] = v
	}
	return c
}

// Participants are the members a change contacts: both views' members,
// the Lost ones aside (New's first, in order).
func Participants(r Record) []hostsplit.NodeID {
	var out []hostsplit.NodeID
	for _, m := range append(slices.Clone(r.New.Members), r.Old.Members...) {
		if !slices.Contains(r.Lost, m.ID) && !slices.Contains(out, m.ID) {
			out = append(out, m.ID)
		}
	}
	return out
}

// dropped are the members of r.Old that r.New does not have (Lost included).
func dropped(r Record) []hostsplit.NodeID {
	var out []hostsplit.NodeID
	for _, m := range r.Old.Members {
		if !r.New.Has(m.ID) {
			out = append(out, m.ID)
		}
	}
	return out
}
