package crawl

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/logging"
)

// Issue #23, defect 2: a malformed line in the middle of a node's crawl
// log (a torn line that a restarted node appended to) made every COMMIT
// of the node's removal fail with "hand-off: malformed crawl log line",
// and the change was retried for ever. The hand-off skips and counts it.
func TestElasticHandoffSkipsMalformedLogLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, 2)
	v1 := hostsplit.View{Epoch: 1, Members: c.all}
	v2 := hostsplit.View{Epoch: 2, Members: c.all[1:]}
	c.start(0, v1.Members, 1, false)
	c.start(1, v1.Members, 1, false)
	c.waitFetches(100)
	// A bad line followed by a whole one (a bad last line was always
	// skipped); node-0 goes on appending whole lines after them.
	f, err := os.OpenFile(filepath.Join(c.root, "node-0", "crawl.log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("2026-11-22T03:04:05.000Z node-0 200 5\n"); err != nil {
		t.Fatal(err)
	}
	if err := NewCrawlLog(f).Write(LogEntry{Time: time.Now(), Node: "node-0", URL: "http://after.sim.test/", Status: 200, Outcome: "ok", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	cctx, stop := context.WithCancel(ctx)
	defer stop()
	rep, err := ChangeMembership(cctx, ChangeOptions{TLS: c.operator(), Old: v1, New: v2, Logger: logging.Lines(func(msg string) {
		t.Log(msg)
		if strings.Contains(msg, "malformed") {
			stop() // the wedge: COMMIT fails the same way at every retry
		}
	}, slog.LevelInfo)})
	if err != nil {
		t.Fatalf("removing node-0: %v", err)
	}
	c.mu.Lock()
	m0 := c.ms["node-0"]
	c.mu.Unlock()
	if h := m0.Handoff(); h.MalformedLogLines != 1 || h.SeenURLs == 0 {
		t.Errorf("node-0's hand-off %+v: want 1 malformed line skipped and its fetched URLs handed over", h)
	}
	if p := m0.Phase(); p != PhaseRemoved {
		t.Errorf("node-0 phase %q after its removal", p)
	}
	t.Logf("removal in %v: %d fetched URLs handed over", rep.Total, rep.HandoffSeen)
	cancel()
	c.wg.Wait()
	for _, m := range c.ms {
		m.Close()
	}
}
