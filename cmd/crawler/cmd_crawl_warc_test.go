package main

import (
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
)

// Issue 27: `crawler crawl --warc-dir` killed with SIGKILL while writing,
// then resumed (twice), then run to the end: the restart closes the file
// the kill left open (cut after its last complete record), every WARC file
// validates with both readers, no file stays open, and every fetch of
// crawl.log has its record — a page is archived before its log line, so
// the only loss a kill may cause is the fetch in flight, which is fetched
// again (at most workers repeated records per kill).
func TestCrawlKill9WARC(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const (
		workers = 8
		kills   = 2
	)
	wdir := filepath.Join(t.TempDir(), "warc")
	c := newCrawlChild(t, workers, 1<<20, "--warc-dir", wdir, "--warc-max-size", "262144")
	killed, leftOpen := killWARCRuns(t, c, kills, wdir)
	out := c.runToEnd(t)
	logRepair(t, out)
	checkRepaired(t, leftOpen, out)
	if open, _ := filepath.Glob(filepath.Join(wdir, "*.open")); len(open) > 0 {
		t.Errorf("files left open: %v", open)
	}
	checkKill9Archive(t, wdir, c.logPath, workers, killed)
}

// checkKill9Archive checks the archive of TestCrawlKill9WARC after its
// last run: every file validates, every fetch of crawl.log has its record
// and at most workers records per kill were written again.
func checkKill9Archive(t *testing.T, wdir, logPath string, workers, killed int) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(wdir, "*.warc.gz"))
	recs, err := warctest.ValidateAll(files)
	if err != nil {
		t.Fatal(err)
	}
	archived := map[string]int{}
	for _, r := range recs {
		if r.Type == "response" || r.Type == "revisit" {
			archived[r.URI]++
		}
	}
	es, err := crawl.ReadLogFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	missing, logged := 0, map[string]int{}
	for _, e := range es {
		if e.Outcome == crawl.OutcomeRobots || e.Status <= 0 {
			continue
		}
		logged[e.URL]++
		if archived[e.URL] == 0 {
			missing++
			t.Errorf("%s fetched (crawl.log) but not archived", e.URL)
		}
	}
	repeats := 0
	for u, n := range archived {
		if p, _ := url.Parse(u); p != nil && strings.HasPrefix(p.Path, "/robots") {
			continue
		}
		if n > logged[u] {
			repeats += n - logged[u]
		}
	}
	if repeats > workers*killed {
		t.Errorf("%d records beyond crawl.log's fetches after %d kills, want ≤ %d (archived, killed before the log line)", repeats, killed, workers*killed)
	}
	t.Logf("%d kills, %d files, %d records, %d fetches logged, %d missing, %d re-archived", killed, len(files), len(recs), len(logged), missing, repeats)
}

// checkRepaired fails the test unless a run that started after a kill left
// a WARC file open reports closing it. A kill between one file's close and
// the next one's open (rotation) leaves nothing to repair.
func checkRepaired(t *testing.T, leftOpen bool, out string) {
	t.Helper()
	if leftOpen && !strings.Contains(out, "left open by a crash closed") {
		t.Errorf("the run after a kill did not repair the open file:\n%s", out)
	}
}

// killWARCRuns kills runs of c with SIGKILL once each has logged a random
// number of fetches (kills times, unless a run finishes first) and returns
// how many it killed and whether the last kill left a WARC file open. It
// checks that each run after a kill repaired the file that kill left open.
func killWARCRuns(t *testing.T, c *crawlChild, kills int, wdir string) (killed int, leftOpen bool) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 27))
	t.Logf("kill schedule seed %d", seed)
	for i := range kills {
		at := c.logLines() + 50 + rng.IntN(800)
		ch, finished := c.startUntil(t, i, at)
		if finished {
			t.Logf("run %d finished before its kill at %d lines", i, at)
			checkRepaired(t, leftOpen, ch.Output())
			leftOpen = false
			break
		}
		if !ch.Kill() {
			if ch.Err() != nil {
				t.Fatalf("run %d failed before its kill: %v\n%s", i, ch.Err(), ch.Output())
			}
			t.Logf("run %d finished before its kill", i)
			checkRepaired(t, leftOpen, ch.Output())
			leftOpen = false
			break
		}
		logRepair(t, ch.Output())
		checkRepaired(t, leftOpen, ch.Output())
		killed++
		open, _ := filepath.Glob(filepath.Join(wdir, "*.warc.gz.open"))
		leftOpen = len(open) > 0
		t.Logf("run %d: SIGKILL at %d crawl log lines; open WARC files %v", i, c.logLines(), open)
		// One file being written, or none when the kill fell between a
		// full file's close and the next one's open (rotation).
		if len(open) > 1 {
			t.Errorf("after the kill: %d open WARC files, want at most the one being written", len(open))
		}
	}
	return killed, leftOpen
}

// logRepair logs a run's report of the WARC file it closed at start.
func logRepair(t *testing.T, out string) {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "left open by a crash") {
			t.Log(l)
		}
	}
}
