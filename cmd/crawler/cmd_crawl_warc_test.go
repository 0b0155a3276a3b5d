package main

import (
	"bytes"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
	"github.com/sextant-crawler/sextant/simweb"
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
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	seeds := filepath.Join(tmp, "seeds.txt")
	if err := os.WriteFile(seeds, []byte(strings.Join(web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, wdir := filepath.Join(tmp, "data"), filepath.Join(tmp, "warc")
	logPath := filepath.Join(dir, "crawl.log")
	args := []string{"crawl", "--seeds", seeds, "--data", dir, "--allow-private", "--ca-file", writeSimwebCA(t, srv, tmp),
		"--resolve", web.Domain() + "=" + srv.Addr(), "--scope", "suffixes", "--suffix", web.Domain(),
		"--max-repeated-segments", "-1", "--workers", strconv.Itoa(workers), "--body-cap", "1048576", "--fetch-timeout", "3s",
		"--min-delay", "0", "--factor", "2", "--max-delay", "50ms",
		"--failure-backoff", "10ms", "--max-failure-backoff", "100ms", "--due-flush", "50ms",
		"--max-pages-per-host", "1000", "--progress", "0",
		"--warc-dir", wdir, "--warc-max-size", "262144"}
	child := func() (*exec.Cmd, *bytes.Buffer) {
		c := exec.Command(exe, "-test.run=^TestCrawlSignalChild$", "-test.count=1", "-test.timeout=5m")
		c.Env = append(os.Environ(), sigChildEnv+"="+strings.Join(args, "\x1f"))
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		return c, &out
	}
	logLines := func() int {
		b, _ := os.ReadFile(logPath)
		return bytes.Count(b, []byte("\n"))
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 27))
	t.Logf("kill schedule seed %d", seed)
	killed := 0
	for i := range kills {
		c, out := child()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- c.Wait() }()
		at := logLines() + 50 + rng.IntN(800)
		finished := false
		for !finished && logLines() < at {
			select {
			case err := <-exited:
				finished = true
				if err != nil {
					t.Fatalf("run %d failed before its kill: %v\n%s", i, err, out)
				}
			case <-time.After(5 * time.Millisecond):
			}
		}
		if finished {
			t.Logf("run %d finished before its kill at %d lines", i, at)
			break
		}
		if err := c.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited
		logRepair(t, out.String())
		killed++
		open, _ := filepath.Glob(filepath.Join(wdir, "*.warc.gz.open"))
		t.Logf("run %d: SIGKILL at %d crawl log lines; open WARC files %v", i, logLines(), open)
		// One file being written, or none when the kill fell between a
		// full file's close and the next one's open (rotation).
		if len(open) > 1 {
			t.Errorf("after the kill: %d open WARC files, want at most the one being written", len(open))
		}
	}
	c, out := child()
	if err := c.Run(); err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	logRepair(t, out.String())
	if killed > 0 && !strings.Contains(out.String(), "left open by a crash closed") {
		t.Errorf("the run after a kill did not repair the open file:\n%s", out)
	}
	if open, _ := filepath.Glob(filepath.Join(wdir, "*.open")); len(open) > 0 {
		t.Errorf("files left open: %v", open)
	}
	checkKill9Archive(t, wdir, logPath, workers, killed)
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

// logRepair logs a run's report of the WARC file it closed at start.
func logRepair(t *testing.T, out string) {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "left open by a crash") {
			t.Log(l)
		}
	}
}
