package handoff

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// t0 is time zero of the scenarios: times are written as offsets (10s).
var t0 = time.Unix(1_700_000_000, 0).UTC()

func members(list string) []hostsplit.Member {
	var ms []hostsplit.Member
	for _, id := range strings.Split(list, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ms = append(ms, hostsplit.Member{ID: hostsplit.NodeID(id), Addr: id + ":1"})
		}
	}
	return ms
}

func nodeIDs(list string) []hostsplit.NodeID {
	var out []hostsplit.NodeID
	for _, m := range members(list) {
		out = append(out, m.ID)
	}
	return out
}

// harness runs one datadriven file against Step.
type harness struct {
	t   *testing.T
	s   State
	rev int64
}

func (h *harness) arg(d *datadriven.TestData, key string) (string, bool) {
	if !d.HasArg(key) {
		return "", false
	}
	var v string
	d.ScanArgs(h.t, key, &v)
	return v, true
}

func (h *harness) dur(d *datadriven.TestData, key string) time.Duration {
	v, ok := h.arg(d, key)
	if !ok {
		return 0
	}
	x, err := time.ParseDuration(v)
	if err != nil {
		d.Fatalf(h.t, "%s: %v", key, err)
	}
	return x
}

var storeErrs = map[string]error{"stale": ErrStale, "busy": ErrBusy, "denied": ErrDenied, "removed": ErrRemoved,
	"io": errors.New("etcd: request timed out")}

func (h *harness) event(d *datadriven.TestData) Event {
	e := Event{Kind: EventKind(d.Cmd)}
	id, _ := h.arg(d, "id")
	e.ChangeID = id
	if m, ok := h.arg(d, "member"); ok {
		e.Member = hostsplit.NodeID(m)
	}
	if m, ok := h.arg(d, "msg"); ok {
		e.Msg = Msg(m)
	}
	e.Epoch = h.s.Change.New.Epoch
	if d.HasArg("epoch") {
		d.ScanArgs(h.t, "epoch", &e.Epoch)
	}
	e.Now = t0.Add(h.dur(d, "now"))
	e.TTL = h.dur(d, "ttl")
	if op, ok := h.arg(d, "op"); ok {
		e.Op = Op(op)
	}
	if p, ok := h.arg(d, "phase"); ok {
		e.MemberPhase = p
	}
	if by, ok := h.arg(d, "by"); ok {
		e.Operator = by
	}
	if name, ok := h.arg(d, "err"); ok {
		e.Err = storeErrs[name]
	}
	switch e.Kind {
	case EvBegin:
		cur := h.s.View
		r := Record{ID: id, Old: cur, Deadline: t0.Add(h.dur(d, "deadline"))}
		if r.ID == "" {
			r.ID = "c1"
		}
		if !d.HasArg("deadline") {
			r.Deadline = time.Time{}
		}
		nw := slices.Clone(cur.Members)
		if a, ok := h.arg(d, "add"); ok {
			nw = append(nw, members(a)...)
		}
		if rm, ok := h.arg(d, "remove"); ok {
			drop := nodeIDs(rm)
			nw = slices.DeleteFunc(nw, func(m hostsplit.Member) bool { return slices.Contains(drop, m.ID) })
		}
		if l, ok := h.arg(d, "lost"); ok {
			r.Lost = nodeIDs(l)
			nw = slices.DeleteFunc(nw, func(m hostsplit.Member) bool { return slices.Contains(r.Lost, m.ID) })
		}
		if v, ok := h.arg(d, "old-epoch"); ok { // a stale caller
			fmt.Sscan(v, &r.Old.Epoch)
		}
		r.New = hostsplit.View{Members: nw}
		if d.HasArg("new-epoch") {
			d.ScanArgs(h.t, "new-epoch", &r.New.Epoch)
		}
		e.Rec = r
	case EvStored:
		// The store answers for the operation pending: the record as the
		// state has it, at the next revision.
		h.rev++
		e.Rec = h.s.Change
		e.Rec.Rev = h.rev
		if e.Op == OpAdvance {
			e.Rec.Phase = h.s.Pending.To
			if p, ok := h.arg(d, "to"); ok {
				e.Rec.Phase = Phase(p)
			}
		}
	}
	return e
}

func (h *harness) describe() string {
	s := h.s
	var b strings.Builder
	fmt.Fprintf(&b, "view: epoch %d %v", s.View.Epoch, s.View.IDs())
	if len(s.Removed) > 0 {
		fmt.Fprintf(&b, "; removed %v", s.Removed)
	}
	if s.Change.Phase != "" {
		fmt.Fprintf(&b, "\nchange %s: %s, epoch %d %v", s.Change.ID, s.Change.Phase, s.Change.New.Epoch, s.Change.New.IDs())
		if s.Pending.Op != "" {
			fmt.Fprintf(&b, ", awaiting store %s", s.Pending.Op)
		}
		if s.Change.Reason != "" {
			fmt.Fprintf(&b, " (%s)", s.Change.Reason)
		}
	}
	var f []string
	for _, id := range slices.Sorted(maps.Keys(s.Fetching)) {
		f = append(f, fmt.Sprintf("%s@%d", id, s.Fetching[id]))
	}
	fmt.Fprintf(&b, "\nfetching: %s", strings.Join(f, " "))
	return b.String()
}

func TestStep(t *testing.T) {
	datadriven.Walk(t, "testdata/step", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			h.t = t
			switch d.Cmd {
			case "init":
				var list string
				d.ScanArgs(t, "members", &list)
				v := hostsplit.View{Epoch: 1, Members: members(list)}
				if d.HasArg("epoch") {
					d.ScanArgs(t, "epoch", &v.Epoch)
				}
				rm, _ := h.arg(d, "removed")
				h.s = NewState(v, nodeIDs(rm))
				return h.describe()
			case "state":
				return h.describe()
			case "ack-all": // every participant acknowledges msg
				var out []string
				var msg string
				d.ScanArgs(t, "msg", &msg)
				for _, id := range Participants(h.s.Change) {
					var acts []Action
					h.s, acts = Step(h.s, Event{Kind: EvAck, Member: id, Msg: Msg(msg), ChangeID: h.s.Change.ID, Epoch: h.s.Change.New.Epoch})
					for _, a := range acts {
						out = append(out, a.String())
					}
				}
				return strings.Join(append(out, h.describe()), "\n")
			}
			e := h.event(d)
			var acts []Action
			h.s, acts = Step(h.s, e)
			var out []string
			for _, a := range acts {
				out = append(out, a.String())
			}
			if len(out) == 0 {
				out = append(out, "(no actions)")
			}
			return strings.Join(append(out, h.describe()), "\n")
		})
	})
}
