package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// TotalsFile is the file in a node's data dir holding its Totals.
const TotalsFile = "totals.json"

// Totals are a data dir's figures since its first run, so that a resumed
// crawl reports them beside its own run's. They are counted from
// crawl.log, which holds every fetch of every run (a run killed before its
// report included): each run's end counts the lines written since the
// last count, from LogOffset on.
type Totals struct {
	Runs       int       `json:"runs"` // runs started on the data dir, this one included
	FirstStart time.Time `json:"first_start"`
	// Resumed: the run began on a data dir with a crawl in it.
	Resumed   bool   `json:"resumed"`
	LogOffset int64  `json:"crawl_log_offset"` // bytes of crawl.log counted
	Fetches   uint64 `json:"fetches"`
	FetchOK   uint64 `json:"fetch_ok"`
	Redirects uint64 `json:"redirects"`
	HTTPErrs  uint64 `json:"http_errors"`
	FetchErrs uint64 `json:"fetch_errors"`
	// Refused counts URLs refused without a request: robots.txt (or the
	// address guard) said no (crawl.log: OUTCOME robots, STATUS 0).
	Refused   uint64 `json:"refused_before_request"`
	WireBytes uint64 `json:"wire_bytes"` // BYTES: body bytes read from the network
}

// StartRun reads dir's totals, counts a new run and saves them, so that a
// run killed before its end still counts. A data dir without totals but
// with a crawl.log (written by a version without totals) is a resumed
// one: its whole log is counted at the end.
func StartRun(dir string, now time.Time) (Totals, error) {
	t, err := readTotals(dir)
	if err != nil {
		return t, err
	}
	if t.Runs == 0 {
		t.FirstStart = now.UTC()
		if fi, err := os.Stat(filepath.Join(dir, "crawl.log")); err == nil && fi.Size() > 0 {
			t.Resumed = true
		}
	} else {
		t.Resumed = true
	}
	t.Runs++
	return t, writeTotals(dir, t)
}

// FinishRun adds the crawl.log lines written since t was last counted
// (this run's, and those of runs killed before their end) and saves t.
func FinishRun(dir string, t Totals) (Totals, error) {
	f, err := os.Open(filepath.Join(dir, "crawl.log"))
	if errors.Is(err, fs.ErrNotExist) {
		return t, writeTotals(dir, t)
	}
	if err != nil {
		return t, fmt.Errorf("report: totals: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < t.LogOffset {
		// The log was rewritten (fsck --repair, or replaced): count it again.
		t.LogOffset, t.Fetches, t.FetchOK, t.Redirects, t.HTTPErrs, t.FetchErrs, t.Refused, t.WireBytes = 0, 0, 0, 0, 0, 0, 0, 0
	}
	if _, err := f.Seek(t.LogOffset, io.SeekStart); err != nil {
		return t, fmt.Errorf("report: totals: %w", err)
	}
	br := bufio.NewReaderSize(f, 1<<16)
	for {
		line, err := br.ReadString('\n')
		if err != nil { // EOF: a partial last line is left for the next count
			break
		}
		t.LogOffset += int64(len(line))
		e, perr := crawl.ParseLogLine(line)
		if perr != nil {
			continue // malformed lines count as nothing, as for every reader
		}
		t.count(e)
	}
	return t, writeTotals(dir, t)
}

func (t *Totals) count(e crawl.LogEntry) {
	switch e.Outcome {
	case crawl.OutcomeRobots:
		if e.Status == 0 {
			t.Refused++
		}
		return
	case crawl.OutcomeOK:
		t.FetchOK++
	case crawl.OutcomeRedirect:
		t.Redirects++
	case crawl.OutcomeHTTPErr:
		t.HTTPErrs++
	default:
		t.FetchErrs++
	}
	t.Fetches++
	t.WireBytes += uint64(max(e.Bytes, 0))
}

// Lines is what a resumed run's end says: that it resumed, and the totals
// since the first start beside this run's fetches. None for a first run.
func (t Totals) Lines(thisRun *Report) []string {
	if !t.Resumed {
		return nil
	}
	first := "before totals were kept"
	if t.Runs > 1 {
		first = t.FirstStart.Format(time.RFC3339)
	}
	return []string{
		fmt.Sprintf("resumed: run %d on this data dir (first started %s); this run: %s fetches (ok %s), %s URLs dropped by the per-host budget",
			t.Runs, first, Thousands(thisRun.Fetches), Thousands(thisRun.FetchOK), Thousands(thisRun.BudgetDropped)),
		fmt.Sprintf("since the first start: %s fetches (ok %s, redirect %s, http-error %s, error %s), %s URLs refused before a request, %.1f MiB read",
			Thousands(t.Fetches), Thousands(t.FetchOK), Thousands(t.Redirects), Thousands(t.HTTPErrs), Thousands(t.FetchErrs),
			Thousands(t.Refused), float64(t.WireBytes)/(1<<20)),
	}
}

func readTotals(dir string) (Totals, error) {
	var t Totals
	b, err := os.ReadFile(filepath.Join(dir, TotalsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil {
		return Totals{}, fmt.Errorf("report: %s: %w", TotalsFile, err)
	}
	return t, nil
}

// writeTotals replaces the file atomically (a crash leaves the old one).
func writeTotals(dir string, t Totals) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, TotalsFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: totals: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, TotalsFile)); err != nil {
		return fmt.Errorf("report: totals: %w", err)
	}
	return nil
}
