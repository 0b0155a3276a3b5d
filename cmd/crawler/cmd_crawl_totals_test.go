package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/report"
)

// A resumed crawl says it resumed and reports the totals since the first
// start — a run killed with SIGKILL included — beside its own run's.
func TestCrawlResumeReportsTotals(t *testing.T) {
	c := newCrawlChild(t, 8, 256<<10)
	dir := filepath.Dir(c.logPath)
	code, out, errOut := runCLI(t, append(c.args, "--max-fetches", "40")...)
	if code != 0 {
		t.Fatalf("run 1: exit %d: %s %s", code, out, errOut)
	}
	if strings.Contains(out, "resumed:") {
		t.Errorf("run 1 says it resumed:\n%s", out)
	}
	ch, finished := c.startUntil(t, 2, c.logLines()+40)
	if finished {
		t.Fatal("run 2 finished before its kill: the web is too small to test anything")
	}
	if !ch.Kill() {
		t.Fatalf("run 2 was not killed\n%s", ch.Output())
	}
	repPath := filepath.Join(t.TempDir(), "report.json")
	code, out, errOut = runCLI(t, append(c.args, "--report-json", repPath)...)
	if code != 0 {
		t.Fatalf("run 3: exit %d: %s %s", code, out, errOut)
	}
	all := fetchLines(t, dir)
	rep := readReport(t, repPath)
	this := uint64(rep["fetches"].(float64))
	if this == 0 || this >= uint64(all) {
		t.Fatalf("run 3 fetched %d of %d: nothing to tell apart", this, all)
	}
	for _, want := range []string{
		"\nresumed: run 3 on this data dir (first started ",
		fmt.Sprintf("); this run: %s fetches (ok ", report.Thousands(this)),
		fmt.Sprintf("\nsince the first start: %s fetches (ok ", report.Thousands(uint64(all))),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run 3 lacks %q:\n%s", want, out)
		}
	}
	tot, _ := rep["since_first_start"].(map[string]any)
	if tot == nil || tot["runs"] != 3.0 || tot["resumed"] != true || tot["fetches"] != float64(all) {
		t.Errorf("JSON since_first_start = %v; want runs 3, resumed, fetches %d", tot, all)
	}
}
