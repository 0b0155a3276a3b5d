package deploy

import (
	"testing"
	"time"
)

// TestBlameRepeat checks how the fault suite assigns a URL fetched twice
// to a stop, without Docker. The first case is CI's failure of 2026-11-27:
// fetches logged while `docker kill` ran were blamed on no stop.
func TestBlameRepeat(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 17, 29, 3, 700e6, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	events := []faultEvent{
		{what: "kill", node: "node-1", at: at(0), end: at(150 * time.Millisecond)},
		{what: "graceful restart", node: "node-0", at: at(45 * time.Second), end: at(47 * time.Second)},
		{what: "graceful restart", node: "node-1", at: at(48 * time.Second), end: at(50 * time.Second)},
	}
	for _, c := range []struct {
		name          string
		node          string
		first, second time.Duration
		want          int
	}{
		{"logged while docker kill ran", "node-1", 93 * time.Millisecond, 18 * time.Second, 0},
		{"before the kill", "node-1", -time.Second, 10 * time.Second, 0},
		{"kill's repeat fetched again after a later restart", "node-1", -time.Second, 60 * time.Second, 0},
		{"after the kill, again after the restart", "node-1", 20 * time.Second, 60 * time.Second, 2},
		{"logged during the graceful stop", "node-1", 49 * time.Second, 55 * time.Second, 2},
		{"another node's stop", "node-2", 20 * time.Second, 60 * time.Second, -1},
		{"both fetches after the kill ended", "node-1", time.Second, 2 * time.Second, -1},
		{"both fetches before the kill", "node-1", -2 * time.Second, -time.Second, -1},
	} {
		if got := blameRepeat(events, c.node, at(c.first), at(c.second)); got != c.want {
			t.Errorf("%s: blamed on %d, want %d", c.name, got, c.want)
		}
	}
}
