package fetcher

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// robotsFileVersion names the format of SaveRobots' stream (its first line).
const robotsFileVersion = "sextant-robots-cache/1"

// ErrRobotsFormat: LoadRobots was given a stream that SaveRobots did not
// write (another format or version).
var ErrRobotsFormat = errors.New("fetcher: not a robots cache of this version")

// robotsHeader is the first line of a saved robots cache. Rules are saved
// as computed for one robots token: a fetcher with another token ignores
// them (they would be another group's).
type robotsHeader struct {
	Format string `json:"format"`
	Token  string `json:"token"`
}

// robotsRecord is one saved cache entry: rules that hold until Expires.
type robotsRecord struct {
	Key        string        `json:"k"`
	Outcome    RobotsOutcome `json:"o"`
	Status     int           `json:"s,omitempty"`
	Fetched    time.Time     `json:"f"`
	Expires    time.Time     `json:"e"`
	Truncated  bool          `json:"t,omitempty"`
	Sitemaps   []string      `json:"sm,omitempty"`
	Redirect   string        `json:"rd,omitempty"`
	Rules      []ruleRecord  `json:"r,omitempty"`
	CrawlDelay time.Duration `json:"cd"`
	Specific   bool          `json:"sp,omitempty"`
}

type ruleRecord struct {
	Pattern string `json:"p"`
	Allow   bool   `json:"a,omitempty"`
	Literal int    `json:"l"`
}

// SaveRobots writes the cached robots.txt rules that are still fresh —
// parsed files and "allow all" answers, with their expiry — so that a
// restarted crawler does not fetch every robots.txt again (issue 25,
// defect 7). Outages, deferred redirects and refusals are not saved: a
// restart tries those hosts again. It returns how many entries it wrote.
func (f *Fetcher) SaveRobots(w io.Writer) (int, error) {
	now := f.opts.Now()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(robotsHeader{Format: robotsFileVersion, Token: f.opts.RobotsToken}); err != nil {
		return 0, err
	}
	// Under the lock only a reference to each entry's rules is taken (the
	// rules are immutable): copying the records themselves held ≈ 240
	// bytes per host for the whole save, every 10 s — 24 MB of a 10⁵-host
	// crawl's live heap, doubled by the GC's heap goal (docs/bench/scale.md).
	c := f.robots
	c.mu.Lock()
	refs := make([]savedRef, 0, len(c.m))
	// Oldest first, so that loading them in order leaves the most recently
	// used at the front of the LRU, as it was.
	for e := c.tail; e != nil; e = e.prev {
		if r := e.rules; r != nil && (r.Outcome == RobotsParsed || r.Outcome == RobotsAllowAll) && r.Expires.After(now) {
			refs = append(refs, savedRef{e.key, r})
		}
	}
	c.mu.Unlock()
	var rec robotsRecord // reused: one record at a time
	for i, ref := range refs {
		r := ref.rules
		rec = robotsRecord{Key: ref.key, Outcome: r.Outcome, Status: r.Status, Fetched: r.Fetched, Expires: r.Expires,
			Truncated: r.Truncated, Sitemaps: r.Sitemaps, Redirect: r.Redirect,
			CrawlDelay: r.rules.crawlDelay, Specific: r.rules.specific, Rules: rec.Rules[:0]}
		for _, ru := range r.rules.rules {
			rec.Rules = append(rec.Rules, ruleRecord{Pattern: ru.pattern, Allow: ru.allow, Literal: ru.literal})
		}
		if err := enc.Encode(&rec); err != nil {
			return i, err
		}
	}
	return len(refs), bw.Flush()
}

// savedRef is an entry SaveRobots writes.
type savedRef struct {
	key   string
	rules *RobotsRules
}

// LoadRobots reads what SaveRobots wrote into the cache: entries already
// expired, or saved for another robots token, are skipped, and entries the
// cache holds already are kept. A damaged line is skipped and counted in
// bad (the host's robots.txt is then fetched again, as without a cache); a
// stream of another format is ErrRobotsFormat.
func (f *Fetcher) LoadRobots(r io.Reader) (loaded, bad int, err error) {
	now := f.opts.Now()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4*int(f.opts.RobotsMaxBytes)+(64<<10))
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return 0, 0, err
		}
		return 0, 0, fmt.Errorf("%w: empty", ErrRobotsFormat)
	}
	var h robotsHeader
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Format != robotsFileVersion {
		return 0, 0, fmt.Errorf("%w: header %.60q", ErrRobotsFormat, sc.Text())
	}
	if h.Token != f.opts.RobotsToken {
		return 0, 0, nil
	}
	c := f.robots
	for sc.Scan() {
		var rec robotsRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Key == "" ||
			(rec.Outcome != RobotsParsed && rec.Outcome != RobotsAllowAll) {
			bad++
			continue
		}
		if !rec.Expires.After(now) {
			continue
		}
		exp := rec.Expires
		if ttl := rec.Fetched.Add(f.opts.RobotsCacheTTL); ttl.Before(exp) {
			exp = ttl // never beyond this fetcher's TTL
		}
		rules := &RobotsRules{Outcome: rec.Outcome, Status: rec.Status, Fetched: rec.Fetched,
			Expires: exp, Truncated: rec.Truncated,
			Sitemaps: rec.Sitemaps, Redirect: rec.Redirect,
			rules: agentRules{crawlDelay: rec.CrawlDelay, specific: rec.Specific}}
		for _, ru := range rec.Rules {
			rules.rules.rules = append(rules.rules.rules, robotsRule{pattern: ru.Pattern, allow: ru.Allow, literal: ru.Literal})
		}
		if c.restore(rec.Key, rules) {
			loaded++
		}
	}
	return loaded, bad, sc.Err()
}

// restore puts saved rules for key into the cache unless it has an entry
// for key already (fetched since the start: newer), evicting the least
// recently used beyond the size.
func (c *robotsCache) restore(key string, r *RobotsRules) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		return false
	}
	c.addLocked(&robotsEntry{key: key, rules: r, lastGood: r})
	return true
}
