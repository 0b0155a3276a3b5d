package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// fullDisk is a crawl log file on a disk that fills up after room more
// bytes: the write that does not fit is written in part (a torn line) and
// fails with ENOSPC, as write(2) does, and so does every later one.
type fullDisk struct {
	mu   sync.Mutex
	f    *os.File
	room int
}

func (d *fullDisk) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(b) <= d.room {
		d.room -= len(b)
		return d.f.Write(b)
	}
	n, _ := d.f.Write(b[:d.room])
	d.room = 0
	return n, &os.PathError{Op: "write", Path: d.f.Name(), Err: syscall.ENOSPC}
}

// Defect 6: on a full disk the crawl printed "done (frontier empty)" with
// URLs still queued, then the error. The end line must say "stopped: fatal
// error: …" before the report, the exit status must be non-zero and the
// oracle is not checked; once space is freed, running again on the same
// --data completes the crawl with exactly the oracle's set, each URL
// logged once over both runs.
func TestCrawlDiskFullStopsTruthfully(t *testing.T) {
	dir := t.TempDir()
	repPath := filepath.Join(t.TempDir(), "report.json")
	// Politeness as in TestCrawlSigintResumes: the crawl is bound by its
	// delays, not the CPU.
	args := []string{"crawl", "--simweb", "small", "--data", dir, "--workers", "32", "--progress", "0",
		"--factor", "2", "--max-delay", "50ms", "--failure-backoff", "10ms", "--max-failure-backoff", "100ms", "--due-flush", "50ms",
		"--cache-advice=false", "--report-json", repPath}
	var logFile *os.File
	full := func(o *crawl.Options) {
		f, err := os.OpenFile(filepath.Join(dir, "crawl.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		logFile = f
		o.CrawlLog = crawl.NewCrawlLog(&fullDisk{f: f, room: 20 << 10})
	}
	var out, errOut bytes.Buffer
	err := runCrawlWith(context.Background(), &cmdEnv{stdout: &out, stderr: &errOut}, args[1:], full)
	if logFile != nil {
		logFile.Close()
	}
	var ue *usageError
	if err == nil || errors.As(err, &ue) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("disk full: returned %v (exit status %d), want a fatal error wrapping ENOSPC\n%s", err, exitStatus(err), out.String())
	}
	o := out.String()
	stop, rep := strings.Index(o, "stopped: fatal error: "), strings.Index(o, "== Sextant crawl report")
	if strings.Contains(o, "done (") || stop < 0 || rep < 0 || stop > rep || !strings.Contains(o[stop:rep], "no space left on device") {
		t.Errorf("disk full: want the end line 'stopped: fatal error: … no space left on device' before the report, no 'done':\n%s", o)
	}
	if !strings.Contains(o, "oracle check    not checked (stopped by a fatal error)") {
		t.Errorf("disk full: the oracle check should not run:\n%s", o)
	}
	j := readReport(t, repPath)
	if end, _ := j["end"].(string); !strings.HasPrefix(end, "stopped: fatal error: ") {
		t.Errorf("JSON end %q", end)
	}
	if q, _ := j["frontier_queued"].(float64); q == 0 {
		t.Errorf("disk full: nothing left queued (frontier_queued %v): the failure struck too late to test anything", j["frontier_queued"])
	}

	// Space freed: the crawl resumes and completes exactly.
	code, o, stderr := runCLI(t, args...)
	if code != 0 || !strings.Contains(o, "done (frontier empty)") || !strings.Contains(o, "EQUALS the oracle's set") {
		t.Fatalf("resume: exit %d, want 0, 'done (frontier empty)' and the oracle's set:\n%s%s", code, o, stderr)
	}
	j = readReport(t, repPath)
	if j["oracle_match"] != true || j["oracle_check"] != "equal" || j["fetched_twice"] != nil || j["end"] != "done (frontier empty)" {
		t.Errorf("resume JSON: oracle_match %v, oracle_check %v, fetched_twice %v, end %v", j["oracle_match"], j["oracle_check"], j["fetched_twice"], j["end"])
	}
}

// exitStatus is run's exit status for a command's error.
func exitStatus(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// A --simweb crawl run to the end whose fetched set differs from the
// oracle's (here every host denied) says so and exits non-zero.
func TestCrawlSimwebOracleMismatchFails(t *testing.T) {
	dir := t.TempDir()
	repPath := filepath.Join(t.TempDir(), "report.json")
	code, out, errOut := runCLI(t, "crawl", "--simweb", "small", "--data", dir, "--progress", "0", "--cache-advice=false",
		"--deny", "sim.test", "--report-json", repPath)
	if code != 1 || !strings.Contains(out, "done (frontier empty)") || !strings.Contains(out, "DIFFERS from the oracle's set") ||
		!strings.Contains(errOut, errOracleMismatch.Error()) {
		t.Fatalf("exit %d, want 1 and the difference reported:\n%s%s", code, out, errOut)
	}
	if j := readReport(t, repPath); j["oracle_match"] != false || j["oracle_check"] != "differs" || j["oracle_diff"] == nil {
		t.Errorf("JSON: oracle_match %v, oracle_check %v, oracle_diff %v", j["oracle_match"], j["oracle_check"], j["oracle_diff"])
	}
}
