package crawl

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/hostsplit"
)

// Finding is one problem Check found in a data directory.
type Finding struct {
	Store   string // frontier, DUE, crawl.log, spool, directory
	Problem string
	// Fatal findings make Open refuse the directory (or would lose URLs);
	// Repair fixes them by a rebuild. The others are reported only.
	Fatal bool
}

// CheckReport is what Check found.
type CheckReport struct {
	Findings        []Finding
	FrontierApplied uint64   // last DUE batch the frontier applied
	DUE             due.Info // the DUE's MANIFEST
	Queued          int64    // URLs stored in the frontier
	Fetched         int      // distinct URLs in the crawl log (robots.txt excluded)
	BadLogLines     int      // crawl log lines that do not parse
	Refetch         int      // queued URLs the crawl log shows fetched: they will be fetched again
	// Member: the directory is a cluster member's (it has a spool, see
	// check.go); Spool is what the spool check found.
	Member bool
	Spool  hostsplit.SpoolReport
}

// spoolDamaged reports whether a fatal finding is the spool's.
func (r CheckReport) spoolDamaged() bool {
	for _, f := range r.Findings {
		if f.Fatal && f.Store == "spool" {
			return true
		}
	}
	return false
}

// OK reports whether no finding is fatal.
func (r CheckReport) OK() bool {
	for _, f := range r.Findings {
		if f.Fatal {
			return false
		}
	}
	return true
}

func (r *CheckReport) add(store string, fatal bool, format string, args ...any) {
	r.Findings = append(r.Findings, Finding{Store: store, Problem: fmt.Sprintf(format, args...), Fatal: fatal})
}

// Check runs Open's checks on opts.DataDir and the expensive ones Open
// skips: it reads every frontier entry (checking its blocks and the stored
// count) and every DUE run block (due.DUE.Verify), and parses the whole
// crawl log. The directory must not be in use. Only the DUE's own recovery
// may change it (a torn log tail is cut). The error is for a failure to
// check; problems found are Findings.
func Check(opts Options) (CheckReport, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return CheckReport{}, err
	}
	var r CheckReport
	dir := opts.DataDir
	if _, err := os.Stat(dir); err != nil {
		return r, fmt.Errorf("crawl: %w", err)
	}
	ds, err := inspectDir(dir)
	if err != nil {
		r.add("DUE", true, "%v", err)
	}
	r.DUE = ds.due
	if err := checkMissing(dir, ds); err != nil {
		r.add("directory", true, "%v", err)
	}
	fetched, bad, err := readFetched(filepath.Join(dir, crawlLogFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		if ds.used() {
			r.add("crawl.log", false, "%s missing: the record of what was fetched is gone (the crawl itself loses no URL)", filepath.Join(dir, crawlLogFile))
		}
	case err != nil:
		r.add("crawl.log", false, "%v", err)
	}
	r.Fetched, r.BadLogLines = len(fetched), bad
	if bad > 0 {
		r.add("crawl.log", false, "%d lines of %s do not parse (skipped)", bad, filepath.Join(dir, crawlLogFile))
	}
	if ds.frontier {
		r.checkFrontier(opts, ds, fetched)
	}
	if ds.due.Exists {
		r.checkDUE(opts)
	}
	if r.Member = isMember(dir); r.Member {
		if r.Spool, err = inspectSpool(dir, true); err != nil {
			r.add("spool", true, "%v", err)
		}
	}
	return r, nil
}

func (r *CheckReport) checkFrontier(opts Options, ds dirState, fetched map[string]string) {
	path := filepath.Join(opts.DataDir, frontierDir)
	fr, err := frontier.Open(path, opts.Frontier)
	if err != nil {
		r.add("frontier", true, "frontier %s does not open: %v", path, err)
		return
	}
	defer fr.Close()
	if r.FrontierApplied, err = fr.Applied(dueSource); err == nil {
		err = checkSeqs(opts.DataDir, fr, ds.due, false) // the scan below reads every key
	}
	if err != nil {
		r.add("frontier", true, "%v", err)
	}
	r.Queued, err = fr.Scan(func(it frontier.Item) error {
		if _, ok := fetched[queueKey(it.URL)]; ok {
			r.Refetch++
		}
		return nil
	})
	if err != nil {
		r.add("frontier", true, "frontier %s: reading its URLs: %v", path, err)
	}
}

func (r *CheckReport) checkDUE(opts Options) {
	path := filepath.Join(opts.DataDir, dueDir)
	d, err := due.Open(path, due.Options{Sink: refuseSink{}, FlushInterval: -1})
	if err != nil {
		r.add("DUE", true, "DUE %s does not open: %v", path, err)
		return
	}
	if err := d.Verify(); err != nil {
		r.add("DUE", true, "DUE %s: %v", path, err)
	}
	d.Close()
}

// refuseSink keeps a DUE opened for checking from delivering anything.
type refuseSink struct{}

func (refuseSink) Deliver(uint64, []due.Entry) error {
	return errors.New("crawl: checking, not delivering")
}

// readFetched returns the distinct URLs the crawl log shows fetched
// (robots.txt fetches excluded), by queueKey, each in its queued form
// (annotated with its line's via and hop path), and the number of lines
// that do not parse.
func readFetched(path string) (map[string]string, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	set, bad := map[string]string{}, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		e, err := ParseLogLine(sc.Text())
		if err != nil {
			bad++
			continue
		}
		if e.Outcome != OutcomeRobots && e.URL != "" {
			q := queuedForm(e) // a sitemap keeps its mark (sitemaps.go), the URL its via and hops
			set[queueKey(q)] = q
		}
	}
	return set, bad, sc.Err()
}

// RepairReport is what Repair did.
type RepairReport struct {
	Check   CheckReport // before the repair
	Rebuilt bool        // the frontier and the DUE were rebuilt
	// URLs re-admitted by the rebuild, by origin (a URL counts once, in
	// the first origin that had it): the old frontier's queue, the old
	// DUE's undelivered batches and buffer, and the crawl log (fetched
	// before: fetched again, to re-discover their links).
	FromFrontier, FromDUE, FromLog int
	Admitted                       int // new frontier's URLs after the rebuild
	// Spool is set when a member's damaged spool was rebuilt.
	Spool *hostsplit.RebuildReport
	// ResendToken is set for a member: the token it advertises so that
	// its peers re-send the URLs they sent it before (hostsplit.RequestResend).
	ResendToken uint64
}

// Repair checks opts.DataDir (Check) and, if a finding is fatal, rebuilds
// the frontier and the DUE (see the package doc, "Data safety"). The old
// stores are kept as frontier.damaged and due.damaged until the next
// repair; a cluster member's damaged spool is rebuilt too (see
// hostsplit.RebuildSpool) and the old one kept as spool.damaged, and the
// member asks its peers to re-send what they sent it (RepairReport.
// ResendToken): its old frontier held URLs known nowhere else. opts
// should be the crawl's own (the host budget and the politeness key apply
// to the rebuilt frontier). Counts go to opts.Logger.
func Repair(opts Options) (RepairReport, error) {
	opts.EnsureDefaults()
	var rep RepairReport
	var err error
	if rep.Check, err = Check(opts); err != nil || rep.Check.OK() {
		return rep, err
	}
	dir := opts.DataDir
	if rep.Check.Member && !rep.Check.spoolDamaged() {
		// Asked first: a repair cut short after the rebuild below would
		// leave nothing for the next one to find.
		if rep.ResendToken, err = hostsplit.RequestResend(filepath.Join(dir, spoolDir)); err != nil {
			return rep, fmt.Errorf("crawl: repair: %w", err)
		}
	}
	seen := map[string]bool{}
	var entries []due.Entry
	add := func(url string, depth uint16) bool {
		if url == "" || seen[queueKey(url)] {
			return false
		}
		seen[queueKey(url)] = true
		entries = append(entries, due.Entry{FP: urlFP(url), URL: url, Depth: depth})
		return true
	}
	// Whatever the old stores still hold: URLs received from peers are
	// known nowhere else.
	if fr, err := frontier.Open(filepath.Join(dir, frontierDir), opts.Frontier); err == nil {
		_, err := fr.Scan(func(it frontier.Item) error {
			if add(it.URL, it.Depth) {
				rep.FromFrontier++
			}
			return nil
		})
		if err != nil {
			opts.Logger.Warn("crawl: repair: old frontier read in part", "err", err)
		}
		fr.Close()
	}
	es, err := drainDUE(filepath.Join(dir, dueDir))
	for _, e := range es {
		if add(e.URL, e.Depth) {
			rep.FromDUE++
		}
	}
	if err != nil {
		opts.Logger.Warn("crawl: repair: old DUE read in part", "err", err)
	}
	fetched, _, err := readFetched(filepath.Join(dir, crawlLogFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("crawl: repair: %w", err)
	}
	for _, u := range fetched {
		if add(u, receivedDepth(u)) {
			rep.FromLog++
		}
	}
	for _, s := range []string{frontierDir, dueDir} {
		old, aside := filepath.Join(dir, s), filepath.Join(dir, s+".damaged")
		if err := os.RemoveAll(aside); err != nil {
			return rep, fmt.Errorf("crawl: repair: %w", err)
		}
		if err := os.Rename(old, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
			return rep, fmt.Errorf("crawl: repair: %w", err)
		}
	}
	o := opts
	o.rebuilding, o.Identity = true, Identity{}
	o.CrawlLog = NewCrawlLog(nopWriter{}) // the rebuild fetches nothing
	n, err := Open(o)
	if err != nil {
		return rep, fmt.Errorf("crawl: repair: %w", err)
	}
	for len(entries) > 0 {
		k := min(len(entries), 4096)
		if err := n.due.AddBatch(entries[:k]); err != nil {
			n.Close()
			return rep, fmt.Errorf("crawl: repair: %w", err)
		}
		entries = entries[k:]
	}
	err = n.due.Flush()
	rep.Admitted = n.fr.Len()
	if cerr := n.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rep, fmt.Errorf("crawl: repair: %w", err)
	}
	rep.Rebuilt = true
	if rep.Check.spoolDamaged() {
		// The batches the spool lost are re-derived like the rest: every
		// page of crawl.log is fetched again and its links routed again
		// (the peers' DUEs drop what they know).
		var prior *hostsplit.SpoolMark
		if m, ok, err := readSpoolMark(dir); err == nil && ok {
			prior = &m // a clean stop's: the senders' applied marks
		}
		sr, err := hostsplit.RebuildSpool(filepath.Join(dir, spoolDir), hostsplit.Limits{}, prior)
		if err == nil {
			err = writeSpoolMark(dir, sr.Mark)
		}
		if err == nil { // a damaged spool is asked once rebuilt: a cut repair finds it damaged again
			rep.ResendToken, err = hostsplit.RequestResend(filepath.Join(dir, spoolDir))
		}
		if err != nil {
			return rep, fmt.Errorf("crawl: repair: %w", err)
		}
		rep.Spool = &sr
		if sr.ReadErr != nil || sr.Skipped > 0 {
			opts.Logger.Warn("crawl: repair: old spool read in part", "skipped", sr.Skipped, "err", sr.ReadErr)
		}
		opts.Logger.Warn("crawl: repair: rebuilt the spool under a new epoch", "dir", dir, "pending_batches", sr.PendingBatches,
			"pending_urls", sr.PendingURLs, "archived_batches", sr.ArchivedBatches, "archived_urls", sr.ArchivedURLs, "old", spoolDir+".damaged")
	}
	opts.Logger.Warn("crawl: repair: rebuilt frontier and DUE", "dir", dir, "queued", rep.Admitted,
		"from_frontier", rep.FromFrontier, "from_due", rep.FromDUE, "refetch_from_log", rep.FromLog, "peers_resend", rep.ResendToken != 0)
	return rep, nil
}

// drainDUE opens the DUE in dir, merges its buffer and returns every URL it
// delivers: the pending batches and the new URLs of its buffer.
func drainDUE(dir string) ([]due.Entry, error) {
	s := &collectSink{}
	d, err := due.Open(dir, due.Options{Sink: s, FlushInterval: time.Hour})
	if err != nil {
		return nil, err
	}
	err = d.Flush()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.es, err
}

type collectSink struct {
	mu sync.Mutex
	es []due.Entry
}

func (s *collectSink) Deliver(_ uint64, batch []due.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.es = append(s.es, batch...)
	return nil
}

type nopWriter struct{}

func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }
