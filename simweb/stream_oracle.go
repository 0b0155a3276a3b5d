package simweb

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sextant-crawler/sextant/internal/extsort"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// ErrStreamSitemaps: StreamOracle does not apply Rules.Sitemaps (whether a
// URL is read as a page or as a sitemap depends on the order it is first
// discovered in, which a level-by-level walk does not keep).
var ErrStreamSitemaps = errors.New("simweb: the streaming oracle does not read sitemaps")

// StreamResult is what StreamOracle found besides the fetched set (which
// it writes to a file).
type StreamResult struct {
	Rules      Rules
	Fetched    int64    // URLs in the exact (non-trap) set
	TrapHosts  []string // as OracleResult.TrapHosts
	ByStatus   map[int]int64
	Disallowed int64
	OutOfScope int64
	Links      int64
	Levels     int // breadth-first levels walked (the greatest depth + 1)
	// MaxHostURLs is the largest number of URLs fetched on one non-trap
	// host (≤ Rules.MaxPagesPerHost, else ErrBudget).
	MaxHostURLs int
}

// streamRunLines is how many discovered URLs a run holds in memory before
// it is sorted and spilled (≈ 100 bytes each with the string header).
const streamRunLines = 1 << 19

// robotsCacheMax bounds the robots.txt cache: it is cleared when full. The
// new URLs of a level are visited sorted, so one host's come together.
const robotsCacheMax = 4096

// StreamOracle computes Oracle's fetched set without holding the web in
// memory: it walks breadth-first a level at a time, the visited URLs of
// every level kept in sorted files under dir and each level's discovered
// URLs sorted on disk (package extsort), and writes the set, sorted, one
// URL per line, to outPath. Memory is a few hundred bytes per host (the
// per-host counts, the trap hosts) plus one run of discovered URLs, and
// does not grow with the number of pages. Rules.Sitemaps must be off.
//
// A level-by-level walk meets every URL first at its shortest depth, as
// Oracle's FIFO walk does, and a URL's fate (out of scope, disallowed,
// trap, fetched) depends only on the URL and its depth, so the two sets are
// equal (TestStreamOracleMatchesOracle).
func (w *Web) StreamOracle(seeds []string, rules Rules, dir, outPath string) (*StreamResult, error) {
	return w.streamOracle(seeds, rules, dir, outPath, streamRunLines)
}

// streamOracle is StreamOracle with runs of runLines URLs.
func (w *Web) streamOracle(seeds []string, rules Rules, dir, outPath string, runLines int) (*StreamResult, error) {
	rules.EnsureDefaults(w.cfg.Domain)
	if rules.Sitemaps {
		return nil, ErrStreamSitemaps
	}
	work, err := os.MkdirTemp(dir, "stream-oracle-")
	if err != nil {
		return nil, fmt.Errorf("simweb: %w", err)
	}
	defer os.RemoveAll(work)
	s := &streamWalk{w: w, rules: rules, work: work, runLines: runLines, res: &StreamResult{Rules: rules, ByStatus: map[int]int64{}},
		robots: robotsCache{}, perHost: map[string]int{}, traps: map[string]bool{}}
	cand, err := extsort.NewSorter(work, runLines, true)
	if err != nil {
		return nil, err
	}
	for _, seed := range seeds {
		u, err := whatwg.Parse(seed)
		if err != nil {
			cand.Close()
			return nil, fmt.Errorf("simweb: seed %q: %w", seed, err)
		}
		if err := cand.Add(u.Href(true)); err != nil {
			cand.Close()
			return nil, err
		}
	}
	for depth := 0; cand.Len() > 0; depth++ {
		level, err := s.admit(cand, depth)
		cand.Close()
		if err != nil {
			return nil, err
		}
		if cand, err = extsort.NewSorter(work, runLines, true); err != nil {
			return nil, err
		}
		if err := s.walkLevel(level, cand); err != nil {
			cand.Close()
			return nil, err
		}
		s.res.Levels = depth + 1
	}
	cand.Close()
	return s.finish(outPath)
}

// streamWalk is the state of one StreamOracle.
type streamWalk struct {
	w        *Web
	rules    Rules
	work     string
	runLines int
	res      *StreamResult
	robots   robotsCache
	perHost  map[string]int
	traps    map[string]bool
	seen     []string // sorted files: every URL considered, one file per level
	fetched  []string // sorted files: the URLs fetched, one file per level
}

// admit considers the candidates of a level that no earlier level saw (as
// Oracle's consider) and returns the file of those to fetch.
func (s *streamWalk) admit(cand *extsort.Sorter, depth int) (string, error) {
	c, err := cand.Sorted()
	if err != nil {
		return "", err
	}
	defer c.Close()
	old, err := extsort.Merge(s.seen...)
	if err != nil {
		return "", err
	}
	defer old.Close()
	seenPath := fmt.Sprintf("%s/seen-%04d", s.work, depth)
	fetchPath := fmt.Sprintf("%s/fetch-%04d", s.work, depth)
	seenW, err := extsort.Create(seenPath)
	if err != nil {
		return "", err
	}
	fetchW, err := extsort.Create(fetchPath)
	if err != nil {
		seenW.Close()
		return "", err
	}
	more := old.Next()
	for c.Next() {
		line := c.Line()
		for more && old.Line() < line {
			more = old.Next()
		}
		if more && old.Line() == line {
			continue
		}
		if err := seenW.Write(line); err != nil {
			break
		}
		if s.consider(line, depth) {
			if err := fetchW.Write(line); err != nil {
				break
			}
		}
	}
	errs := errors.Join(c.Err(), old.Err(), seenW.Close(), fetchW.Close())
	if errs != nil {
		return "", errs
	}
	s.seen = append(s.seen, seenPath)
	s.fetched = append(s.fetched, fetchPath)
	return fetchPath, nil
}

// consider applies Oracle's consider to a URL met for the first time and
// reports whether it is fetched (and walked).
func (s *streamWalk) consider(href string, depth int) bool {
	u, err := whatwg.Parse(href)
	if err != nil {
		s.res.OutOfScope++
		return false
	}
	host, rules := u.Hostname(), s.rules
	if (u.Scheme() != "http" && u.Scheme() != "https") || len(href) > rules.MaxURLLength ||
		!(host == rules.Scope || strings.HasSuffix(host, "."+rules.Scope)) ||
		(rules.MaxDepth > 0 && depth > rules.MaxDepth) {
		s.res.OutOfScope++
		return false
	}
	if len(s.robots) >= robotsCacheMax {
		clear(s.robots)
	}
	if !s.w.robotsAllow(s.robots, u, rules) {
		s.res.Disallowed++
		return false
	}
	if h, ok := s.w.HostIndex(host); ok && s.w.hosts[h].kind == Trap {
		s.traps[host] = true
		return false
	}
	s.perHost[host]++
	s.res.Fetched++
	return true
}

// walkLevel fetches, through the generator, every URL of the level file in
// parallel and adds what they make discovered to next.
func (s *streamWalk) walkLevel(level string, next *extsort.Sorter) error {
	m, err := extsort.Merge(level)
	if err != nil {
		return err
	}
	defer m.Close()
	or := &OracleResult{Rules: s.rules, w: s.w}
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	gens := make([]*gen, workers)
	for i := range gens {
		gens[i] = s.w.getGen(true)
		defer putGen(gens[i])
	}
	chunk := make([]string, 0, 256)
	flush := func() error {
		out := make([]walked, len(chunk))
		var nextI atomic.Int64
		var wg sync.WaitGroup
		for _, g := range gens {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(nextI.Add(1) - 1); i < len(chunk); i = int(nextI.Add(1) - 1) {
					out[i] = or.walk(g, chunk[i], 0)
				}
			}()
		}
		wg.Wait()
		for _, o := range out {
			if o.err != nil {
				return o.err
			}
			s.res.ByStatus[o.status]++
			s.res.Links += int64(o.links)
			for _, v := range o.found {
				if err := next.Add(v.Href(true)); err != nil {
					return err
				}
			}
		}
		chunk = chunk[:0]
		return nil
	}
	for m.Next() {
		if chunk = append(chunk, m.Line()); len(chunk) == cap(chunk) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := m.Err(); err != nil {
		return err
	}
	return flush()
}

// finish checks the budgets and merges the levels' fetched files into
// outPath.
func (s *streamWalk) finish(outPath string) (*StreamResult, error) {
	for host, n := range s.perHost {
		if n > s.rules.MaxPagesPerHost {
			return nil, fmt.Errorf("%w: %s has %d URLs > %d", ErrBudget, host, n, s.rules.MaxPagesPerHost)
		}
		s.res.MaxHostURLs = max(s.res.MaxHostURLs, n)
	}
	for h := range s.traps {
		s.res.TrapHosts = append(s.res.TrapHosts, h)
	}
	sort.Strings(s.res.TrapHosts)
	m, err := extsort.Merge(s.fetched...)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	out, err := extsort.Create(outPath)
	if err != nil {
		return nil, err
	}
	for m.Next() {
		if err := out.Write(m.Line()); err != nil {
			break
		}
	}
	if err := errors.Join(m.Err(), out.Close()); err != nil {
		return nil, err
	}
	return s.res, nil
}
