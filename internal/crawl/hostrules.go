package crawl

import "github.com/sextant-crawler/sextant/frontier"

// The node's side of the operator's run-time rules (issue 28): the rules
// themselves are the frontier's (frontier/hostrules.go); internal/control
// persists them and serves the Control service.

// SetHostRules replaces the frontier's pauses, blocks and overrides.
func (n *Node) SetHostRules(r frontier.HostRules) error { return n.fr.SetRules(r) }

// HostRules returns the frontier's rules.
func (n *Node) HostRules() frontier.HostRules { return n.fr.Rules() }

// HeldByRules counts the stored URLs of paused and of blocked hosts (a
// scan of the frontier).
func (n *Node) HeldByRules() (paused, blocked int64, err error) { return n.fr.Held() }

// ParkedInFlight is the number of paused or blocked hosts whose fetch
// is still in flight.
func (n *Node) ParkedInFlight() int { return n.fr.ParkedInFlight() }
