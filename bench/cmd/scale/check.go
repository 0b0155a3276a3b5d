package main

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/extsort"
	"github.com/sextant-crawler/sextant/simweb"
)

// checkResult is the fetched set against the oracle's, both streamed
// sorted.
type checkResult struct {
	OracleURLs     int64
	OracleFile     string
	OracleWall     float64 // s to compute it (0: read from -oracle)
	OracleCPU      float64 // s of this process's CPU
	OracleMaxRSS   float64 // bytes: this process's peak RSS after it
	OracleLevels   int
	Fetches        int64 // fetch lines of the crawl log (robots-disallowed excluded)
	Distinct       int64
	Missing, Extra int64
	Twice          int64 // URLs fetched more than once
	Malformed      int64 // unparsable crawl log lines
	// OffWeb counts fetch lines of URLs on hosts the web does not have
	// (simweb links a few: a fetch that fails at the network, which the
	// oracle counts as robots-disallowed); they are not compared.
	OffWeb   int64
	Examples []string
}

// Equal reports whether the crawl fetched exactly the oracle's set, each
// URL once.
func (c *checkResult) Equal() bool {
	return c != nil && c.Missing == 0 && c.Extra == 0 && c.Twice == 0 && c.Malformed == 0 && c.Distinct == c.OracleURLs
}

func (c *checkResult) summary() string {
	return sprintf("%d oracle URLs, %d distinct fetched: %d missing, %d extra, %d twice (%d off-web fetch attempts not compared)", c.OracleURLs, c.Distinct, c.Missing, c.Extra, c.Twice, c.OffWeb)
}

// checkAgainstOracle computes (or reads) the oracle's sorted set and
// compares it with the URLs of the crawl log.
func checkAgainstOracle(o options, web *simweb.Web, logPath string) (*checkResult, error) {
	c := &checkResult{OracleFile: o.oracle}
	if c.OracleFile == "" {
		c.OracleFile = filepath.Join(o.out, "oracle.txt")
		t0, cpu0 := time.Now(), selfCPU()
		res, err := web.StreamOracle(web.Seeds(), simweb.Rules{}, o.out, c.OracleFile)
		if err != nil {
			return nil, err
		}
		c.OracleWall, c.OracleCPU = time.Since(t0).Seconds(), selfCPU()-cpu0
		c.OracleLevels = res.Levels
		c.OracleMaxRSS = selfMaxRSS()
		if len(res.TrapHosts) > 0 {
			return nil, fmt.Errorf("the scale web has %d trap hosts: its fetched set is not exact", len(res.TrapHosts))
		}
	}
	fetched, err := extsort.NewSorter(o.out, 0, false)
	if err != nil {
		return nil, err
	}
	defer fetched.Close()
	onWeb := func(u string) bool {
		pu, err := url.Parse(u)
		if err != nil {
			return false
		}
		_, ok := web.HostIndex(strings.ToLower(pu.Hostname()))
		return ok
	}
	if err := readLog(logPath, fetched, c, onWeb); err != nil {
		return nil, err
	}
	got, err := fetched.Sorted()
	if err != nil {
		return nil, err
	}
	defer got.Close()
	want, err := extsort.Merge(c.OracleFile)
	if err != nil {
		return nil, err
	}
	defer want.Close()
	compare(want, got, c)
	return c, errors.Join(got.Err(), want.Err())
}

// readLog adds the URL of every fetch line of the crawl log to s.
func readLog(path string, s *extsort.Sorter, c *checkResult, onWeb func(string) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(bufio.NewReaderSize(f, 1<<16))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		e, err := crawl.ParseLogLine(sc.Text())
		if err != nil {
			c.Malformed++
			continue
		}
		if e.Outcome == crawl.OutcomeRobots {
			continue // disallowed: no request was sent
		}
		c.Fetches++
		if !onWeb(e.URL) {
			c.OffWeb++
			continue
		}
		if err := s.Add(e.URL); err != nil {
			return err
		}
	}
	return sc.Err()
}

// compare walks both sorted streams once: missing (oracle only), extra
// (crawl only), fetched twice (a crawl URL counted more than once).
func compare(want, got *extsort.Merger, c *checkResult) {
	example := func(kind, u string) {
		if len(c.Examples) < 6 {
			c.Examples = append(c.Examples, kind+" "+u)
		}
	}
	w, g := want.Next(), got.Next()
	for w || g {
		inWant := w && (!g || want.Line() <= got.Line())
		inGot := g && (!w || got.Line() <= want.Line())
		if inWant {
			c.OracleURLs++
			if !inGot {
				c.Missing++
				example("missing", want.Line())
			}
		}
		if inGot {
			c.Distinct++
			if !inWant {
				c.Extra++
				example("extra", got.Line())
			}
			if got.Count() > 1 {
				c.Twice++
				example(fmt.Sprintf("fetched %d times", got.Count()), got.Line())
			}
		}
		if inWant {
			w = want.Next()
		}
		if inGot {
			g = got.Next()
		}
	}
}

func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func selfMaxRSS() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Maxrss) * 1024
}
