package control

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/frontier"
)

// Actions of a Change.
const (
	ActPause   = "pause"
	ActResume  = "resume"
	ActBlock   = "block"
	ActUnblock = "unblock"
	ActSet     = "set"
)

// Change is one operator command on the rules.
type Change struct {
	Action string
	// Match selects the hosts (both fields empty: every host; pause and
	// resume only).
	Match frontier.Match
	// Override (set only): the non-zero fields are set on Match.Host's
	// override; Clear removes the host's override first.
	Override frontier.Override
	Clear    bool
}

func (ch Change) String() string {
	s := ch.Action + " " + ch.Match.String()
	if ch.Action == ActSet {
		var parts []string
		if ch.Clear {
			parts = append(parts, "clear")
		}
		if o := ch.Override; o.Delay > 0 {
			parts = append(parts, "delay "+o.Delay.String())
		}
		if o := ch.Override; o.Factor > 0 || o.FactorSet {
			parts = append(parts, fmt.Sprintf("factor %g", o.Factor))
		}
		if o := ch.Override; o.MaxPages > 0 {
			parts = append(parts, fmt.Sprintf("max-pages %d", o.MaxPages))
		}
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

// Apply returns r changed by ch (r itself is not modified). Resuming or
// unblocking every host lifts every pause or block; resuming a host lifts
// only the pause that names it.
func (ch Change) Apply(r frontier.HostRules) (frontier.HostRules, error) {
	r = r.Clone()
	m := ch.Match
	m.Host, m.Domain = strings.ToLower(strings.TrimSpace(m.Host)), strings.ToLower(strings.Trim(strings.TrimSpace(m.Domain), "."))
	all := m == frontier.Match{}
	if m.Host != "" && m.Domain != "" {
		return r, fmt.Errorf("%w: give a host or a domain, not both", ErrInvalidChange)
	}
	switch ch.Action {
	case ActPause:
		if !slices.Contains(r.Paused, m) {
			r.Paused = append(r.Paused, m)
		}
	case ActResume:
		if all {
			r.Paused = nil
		} else {
			r.Paused = slices.DeleteFunc(r.Paused, func(x frontier.Match) bool { return x == m })
		}
	case ActBlock:
		if all {
			return r, fmt.Errorf("%w: block needs --host or --domain", ErrInvalidChange)
		}
		if !slices.Contains(r.Blocked, m) {
			r.Blocked = append(r.Blocked, m)
		}
	case ActUnblock:
		if all {
			r.Blocked = nil
		} else {
			r.Blocked = slices.DeleteFunc(r.Blocked, func(x frontier.Match) bool { return x == m })
		}
	case ActSet:
		return ch.applySet(r, m.Host)
	default:
		return r, fmt.Errorf("%w: unknown action %q", ErrInvalidChange, ch.Action)
	}
	if len(r.Paused) == 0 {
		r.Paused = nil
	}
	if len(r.Blocked) == 0 {
		r.Blocked = nil
	}
	return r, nil
}

func (ch Change) applySet(r frontier.HostRules, host string) (frontier.HostRules, error) {
	o := ch.Override
	if host == "" {
		return r, fmt.Errorf("%w: set needs --host", ErrInvalidChange)
	}
	if o.Delay < 0 || o.Factor < 0 || o.MaxPages < 0 {
		return r, fmt.Errorf("%w: negative override", ErrInvalidChange)
	}
	if !ch.Clear && o == (frontier.Override{}) {
		return r, fmt.Errorf("%w: set needs --delay, --factor, --max-pages or --clear", ErrInvalidChange)
	}
	cur := r.Overrides[host]
	if ch.Clear {
		cur = frontier.Override{}
	}
	if o.Delay > 0 {
		cur.Delay = o.Delay
	}
	if o.Factor > 0 || o.FactorSet {
		cur.Factor, cur.FactorSet = o.Factor, o.FactorSet
	}
	if o.MaxPages > 0 {
		cur.MaxPages = o.MaxPages
	}
	if r.Overrides == nil {
		r.Overrides = map[string]frontier.Override{}
	}
	r.Overrides[host] = cur
	if cur == (frontier.Override{}) {
		delete(r.Overrides, host)
	}
	if len(r.Overrides) == 0 {
		r.Overrides = nil
	}
	return r, nil
}

// Describe is r in a few lines for an operator.
func Describe(r frontier.HostRules) []string {
	var out []string
	for _, m := range r.Paused {
		out = append(out, "paused: "+m.String())
	}
	for _, m := range r.Blocked {
		out = append(out, "blocked: "+m.String())
	}
	for _, h := range sortedKeys(r.Overrides) {
		o := r.Overrides[h]
		var parts []string
		if o.Delay > 0 {
			parts = append(parts, "delay "+o.Delay.Round(time.Millisecond).String())
		}
		if o.Factor > 0 || o.FactorSet {
			parts = append(parts, fmt.Sprintf("factor %g", o.Factor))
		}
		if o.MaxPages > 0 {
			parts = append(parts, fmt.Sprintf("max-pages %d", o.MaxPages))
		}
		out = append(out, "override: host "+h+": "+strings.Join(parts, ", "))
	}
	return out
}

// Summary is st in a few lines for the status page: the rules, then what
// they hold back.
func Summary(st Status) []string {
	out := Describe(st.Rules)
	if m := st.Metrics; m.HeldPaused+m.HeldBlocked > 0 || len(out) > 0 {
		out = append(out, fmt.Sprintf("held: %d URLs of paused hosts, %d of blocked hosts", m.HeldPaused, m.HeldBlocked))
	}
	if st.Metrics.Draining {
		out = append(out, "draining")
	}
	return out
}
