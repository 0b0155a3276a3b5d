package crawl

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// diskFull fails every write to the DUE's files with ENOSPC once room
// writes have been made: the disk filled up.
type diskFull struct{ room atomic.Int64 }

func (d *diskFull) String() string { return "disk full" }

func (d *diskFull) MaybeError(op errorfs.Op) error {
	if op.Kind.ReadOrWrite() != errorfs.OpIsWrite || d.room.Add(-1) >= 0 {
		return nil
	}
	return fmt.Errorf("write %s: %w", op.Path, syscall.ENOSPC)
}

// Defect 6 (the node's half): the DUE's disk fills up mid-crawl. The node
// stops with an error wrapping ENOSPC, its counters agree with crawl.log,
// and once space is freed a restarted node completes the crawl with
// exactly the oracle's set, nothing fetched twice.
func TestDUEDiskFullResumesExactly(t *testing.T) {
	web, srv, oracle := smallWeb(t, 1<<20)
	dir := t.TempDir()
	full := &diskFull{}
	full.room.Store(300)
	opts := testNodeOptions(t, dir, srv, web.Domain())
	opts.DUEFS = errorfs.Wrap(vfs.Default, full)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	err = n.Run(ctx, true)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Run on a full disk returned %v, want an error wrapping ENOSPC", err)
	}
	st := n.Stats()
	n.Close() // the failed DUE may report its failure again
	logPath := filepath.Join(dir, "crawl.log")
	logged := readLog(t, logPath)
	if st.Fetches != uint64(len(logged)) {
		t.Errorf("disk full: Stats.Fetches %d, crawl.log has %d fetch lines", st.Fetches, len(logged))
	}
	if st.Fetches == 0 || st.Frontier.Queued == 0 {
		t.Fatalf("disk full after %d fetches with %d queued: the failure must strike mid-crawl", st.Fetches, st.Frontier.Queued)
	}
	t.Logf("stopped after %d fetches (%d requeued), %d queued: %v", st.Fetches, st.FetchesRequeued, st.Frontier.Queued, err)

	opts.DUEFS = nil // space freed
	if n, err = Open(opts); err != nil {
		t.Fatal(err)
	}
	crawlToEnd(t, n, web.Seeds(), 3*time.Minute)
	fetched, dups := fetchedURLs(t, logPath)
	if len(dups) > 0 {
		t.Errorf("%d URLs fetched twice, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	if err := oracle.Check(fetched); err != nil {
		t.Errorf("after the resume: %v", err)
	}
}
