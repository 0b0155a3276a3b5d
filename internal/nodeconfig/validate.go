package nodeconfig

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/termsafe"
	"github.com/sextant-crawler/sextant/internal/warc"
)

// validateMembers checks members and that id is one of them.
func (c *Config) validateMembers(bad func(format string, args ...any)) {
	seen := map[string]bool{}
	self := false
	for i, m := range c.Members {
		if m.ID == "" {
			bad("members[%d]: id is required", i)
		}
		if !termsafe.Printable(m.ID) {
			bad("members[%d]: id %q: control or non-printable characters", i, m.ID)
		}
		if seen[m.ID] {
			bad("members[%d]: duplicate id %q", i, m.ID)
		}
		seen[m.ID] = true
		if m.ID == c.ID {
			self = true
		}
		if err := hostPort(m.Addr, true); err != nil {
			bad("members[%d] (%s): addr %q: %v", i, m.ID, m.Addr, err)
		}
	}
	if c.ID != "" && len(c.Members) > 0 && !self {
		bad("id %q is not in members", c.ID)
	}
}

// validatePoliteness checks the politeness delays and the other durations.
func (c *Config) validatePoliteness(bad func(format string, args ...any)) {
	p := c.Politeness
	if p.MinDelay != nil && *p.MinDelay < 0 {
		bad("politeness.min_delay %v < 0", time.Duration(*p.MinDelay))
	}
	if p.MinDelay != nil && p.MaxDelay != nil && *p.MaxDelay < *p.MinDelay {
		bad("politeness.max_delay %v < min_delay %v", time.Duration(*p.MaxDelay), time.Duration(*p.MinDelay))
	}
	for name, d := range map[string]*Duration{"politeness.max_delay": p.MaxDelay, "politeness.failure_backoff": p.FailureBackoff, "politeness.max_failure_backoff": p.MaxFailureBackoff, "fetch_timeout": c.FetchTimeout, "due_flush": c.DUEFlush} {
		if d != nil && *d < 0 {
			bad("%s %v < 0", name, time.Duration(*d))
		}
	}
	if c.BodyCap < 0 {
		bad("body_cap %d < 0", c.BodyCap)
	}
	if c.FetchAttempts < 0 {
		bad("fetch_attempts %d: want ≥ 1 (0 or absent: the default)", c.FetchAttempts)
	}
	if f := p.Factor; f != nil && (!(*f >= 0) || math.IsInf(*f, 1)) {
		bad("politeness.factor %v: want a finite number ≥ 0", *f)
	}
	if d := c.Dispatch; d != "" && d != frontier.DispatchAny && d != frontier.DispatchHostAffine {
		bad("dispatch %q: want %q or %q", d, frontier.DispatchAny, frontier.DispatchHostAffine)
	}
}

// validateWARC checks the archiving settings that can be checked without
// their directory.
func (c *Config) validateWARC(bad func(format string, args ...any)) {
	if w := c.WARCCompression; w != "" {
		if _, err := warc.ParseCompression(w); err != nil {
			bad("warc_compression %q: want fast, huffman, store or 1-9", w)
		}
	}
}

// hostPort checks "host:port"; the host may be empty unless needHost.
func hostPort(s string, needHost bool) error {
	h, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port")
	}
	if needHost && h == "" {
		return errors.New("host is empty")
	}
	if h != "" && !validHostName(h) {
		if _, err := netip.ParseAddr(h); err != nil {
			return fmt.Errorf("bad host %q", h)
		}
	}
	var n int
	if _, err := fmt.Sscanf(port, "%d", &n); err != nil || n < 0 || n > 65535 || fmt.Sprint(n) != port {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}
