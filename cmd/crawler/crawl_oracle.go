package main

import (
	"fmt"
	"math"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/report"
	"github.com/sextant-crawler/sextant/simweb"
)

// crawlReport is `crawler crawl`'s final report: the report every crawl
// ends with, how the crawl ended and, with --simweb, the check of the
// fetched set against simweb's oracle (as `crawler demo` does).
type crawlReport struct {
	*report.Report
	// End is the end line: "done (…)" or "stopped: fatal error: …".
	End string `json:"end"`
	// SinceFirstStart are the data dir's totals over every run (Resumed
	// says this run was not the first).
	SinceFirstStart *report.Totals `json:"since_first_start"`
	// OracleCheck is "equal", "differs" or "not checked (why)"; empty
	// without --simweb. OracleMatch is set when the check ran.
	OracleCheck     string `json:"oracle_check,omitempty"`
	OracleMatch     *bool  `json:"oracle_match,omitempty"`
	OracleURLs      int    `json:"oracle_urls,omitempty"`
	DistinctFetched int    `json:"distinct_fetched,omitempty"`
	FetchedTwice    int    `json:"fetched_twice,omitempty"`
	OracleDiff      string `json:"oracle_diff,omitempty"`
}

// simwebOracle is the synthetic web a --simweb crawl ran on and the rules
// its oracle applies (the crawl's, see oracleRules).
type simwebOracle struct {
	web   *simweb.Web
	rules simweb.Rules
}

// oracleRules are the oracle's rules for a crawl with options o (and
// --max-url-length maxURLLen).
func oracleRules(o crawl.Options, maxURLLen int) simweb.Rules {
	r := simweb.Rules{UserAgent: o.Fetcher.RobotsToken, MaxURLLength: maxURLLen, BodyCap: o.Fetcher.BodyCap,
		MaxPagesPerHost: o.MaxPagesPerHost, MaxDepth: o.MaxDepth, Sitemaps: o.Sitemaps != crawl.SitemapsOff}
	if r.MaxPagesPerHost == 0 { // unbounded (the oracle's 0 means its default)
		r.MaxPagesPerHost = math.MaxInt32
	}
	return r
}

// checkOracle checks the URLs fetched over every run on this data
// directory (the crawl log at logPath) against the oracle, fills in the
// report's oracle fields and returns the report line. notChecked, if not
// empty, says why the check does not apply (the crawl did not run to the
// end: its fetched set is a part of the oracle's).
func (r *crawlReport) checkOracle(o *simwebOracle, notChecked, logPath string) string {
	line := func() string { return "oracle check    " + r.OracleCheck }
	if notChecked == "" && o.rules.MaxDepth > 0 {
		// Options.MaxDepth is the depth along the path the crawl found
		// first; the oracle's is the shortest. Sets may differ legitimately.
		notChecked = "--max-depth: the crawl's depth is along the path it found first, the oracle's the shortest"
	}
	if notChecked != "" {
		r.OracleCheck = "not checked (" + notChecked + ")"
		return line()
	}
	oracle, err := o.web.Oracle(o.web.Seeds(), o.rules)
	if err != nil {
		r.OracleCheck = fmt.Sprintf("not checked (the oracle does not apply to these flags: %v)", err)
		return line()
	}
	r.OracleURLs = oracle.Size()
	match := false
	r.OracleMatch = &match
	r.OracleCheck = "differs"
	es, err := crawl.ReadLogFile(logPath)
	if err != nil {
		r.OracleDiff = fmt.Sprintf("reading the crawl log: %v", err)
		return fmt.Sprintf("%s: %s", line(), r.OracleDiff)
	}
	count := map[string]int{}
	crawl.CountFetches(es, count)
	r.DistinctFetched, r.FetchedTwice, r.OracleDiff = crawl.CheckFetched(count, oracle.Check)
	if r.OracleDiff == "" {
		match, r.OracleCheck = true, "equal"
	}
	verdict := "EQUALS the oracle's set"
	if !match {
		verdict = "DIFFERS from the oracle's set: " + r.OracleDiff
	}
	return fmt.Sprintf("oracle check    %d distinct URLs fetched over all runs (crawl.log), %d fetched twice; %s (%d URLs + ≤ %d on each of %d trap hosts)",
		r.DistinctFetched, r.FetchedTwice, verdict, r.OracleURLs, o.rules.MaxPagesPerHost, len(oracle.TrapHosts))
}
