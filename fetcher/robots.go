package fetcher

//go:generate go run ./internal/ctcgen -in ../testdata/robots-spec/src/main/resources/CTC -out ctc_table_test.go

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// RobotsOutcome says how a host's robots.txt was obtained.
type RobotsOutcome int

const (
	// RobotsParsed: a 2xx response; its rules apply.
	RobotsParsed RobotsOutcome = iota
	// RobotsAllowAll: 4xx, a redirect without target, or too many
	// redirects: the file is unavailable and nothing is restricted.
	RobotsAllowAll
	// RobotsUnreachable: 5xx or a network failure: everything is
	// disallowed until Expires, then robots.txt is fetched again. Callers
	// should requeue, not drop, the URLs they held back.
	RobotsUnreachable
	// RobotsStaleFallback: unreachable for longer than RobotsUnreachable
	// (30 days): the last good copy applies, or nothing is restricted if
	// there is none (RFC 9309 §2.3.1.4).
	RobotsStaleFallback
	// RobotsDeferred: robots.txt redirects to another host whose
	// politeness slot Options.RobotsHostGate could not give yet, or (with
	// a gate) to another path of the same host, whose next request waits
	// for the host's delay. Nothing may be fetched; Retry is set: hold the
	// URLs until Expires (and the host's next slot), when Robots resumes
	// at that hop. Not a failure of the host.
	RobotsDeferred
)

// HostGate gives Robots the politeness slot of another host for one
// request: a robots.txt redirect hop (Options.RobotsHostGate). The crawler's
// implementation borrows the slot from its frontier.
type HostGate interface {
	// Acquire takes, for one request to target (an absolute URL), the slot
	// of its host, for a caller that holds the slot of the host holding
	// (host[:port]). If both share a politeness key it succeeds at once.
	// ok false means not now: ask again at retry. After ok, release must be
	// called once with the request's duration and whether it failed (5xx or
	// network error). err means the gate cannot be used (shutting down).
	Acquire(holding, target string) (release func(d time.Duration, failed bool), retry time.Time, ok bool, err error)
}

func (o RobotsOutcome) String() string {
	switch o {
	case RobotsParsed:
		return "parsed"
	case RobotsAllowAll:
		return "allow-all"
	case RobotsUnreachable:
		return "unreachable"
	case RobotsStaleFallback:
		return "stale-fallback"
	case RobotsDeferred:
		return "deferred"
	}
	return fmt.Sprintf("RobotsOutcome(%d)", int(o))
}

// RobotsRules are the robots.txt rules of one scheme://host for this
// crawler's product token. Immutable and safe for concurrent use.
type RobotsRules struct {
	Outcome RobotsOutcome
	// Status is the final HTTP status (0 after a network failure).
	Status int
	// Err is the network error behind RobotsUnreachable, else nil.
	Err error
	// Fetched is when robots.txt was last fetched; Expires when it will be
	// fetched again.
	Fetched, Expires time.Time
	// Retry is set on RobotsUnreachable rules while the host has failed
	// fewer than Options.RobotsAttempts times in a row: nothing may be
	// fetched now, but the URL should be held (requeued) — robots.txt is
	// fetched again once Expires passes (Options.RobotsRetryDelay, doubling).
	// Without Retry, the disallow holds until Expires and the caller may
	// drop the URL.
	Retry bool
	// Truncated reports that the file exceeded RobotsMaxBytes and only
	// its first RobotsMaxBytes (up to the last complete line) were parsed.
	Truncated bool
	// Sitemaps lists the sitemap records of the file.
	Sitemaps []string
	// RefusedRedirect is the target of a redirect to another host that was
	// not followed (no RobotsHostGate, RobotsCrossHostRedirects unset); the
	// outcome is then RobotsAllowAll. Empty otherwise.
	RefusedRedirect string
	// Redirect is the first hop of a redirect chain to another host:
	// followed (the rules come from there) or, with RobotsDeferred, waited
	// for. Empty otherwise.
	Redirect string

	rules agentRules
	// deferred is set on RobotsDeferred rules only: behind a pointer, as
	// every host's cached rules would otherwise carry its 40 bytes.
	deferred *robotsHop
}

// robotsHop is where a deferred robots.txt redirect chain resumes: the hop
// to fetch, its number, and the gate's retry time.
type robotsHop struct {
	pending *url.URL
	hop     int
	retryAt time.Time
}

// Allowed reports whether this crawler may fetch rawURL (a URL of the
// rules' host, or just its path and query, percent-encoded as on the wire).
func (r *RobotsRules) Allowed(rawURL string) bool {
	switch r.Outcome {
	case RobotsAllowAll:
		return true
	case RobotsUnreachable, RobotsDeferred:
		return false
	}
	return r.rules.allowed(robotsPath(rawURL))
}

// CrawlDelay returns the Crawl-delay of the applicable group, or 0. The
// caller caps it.
func (r *RobotsRules) CrawlDelay() time.Duration {
	return max(r.rules.crawlDelay, 0)
}

// Robots returns the rules for scheme://host (host may carry a port), from
// the cache or by fetching /robots.txt. fetched reports whether the network
// was used, and dur how long the requests to host took (its own redirect
// hops included; hops to another host are charged to that host through
// Options.RobotsHostGate): a fetch costs the host a politeness slot like
// any other request. Concurrent calls
// for one host share a single fetch; only one of them reports fetched.
//
// Network failures are not errors: they yield RobotsUnreachable rules. err
// is non-nil only for a bad scheme or host, or when ctx ends (nothing is
// then cached).
func (f *Fetcher) Robots(ctx context.Context, scheme, host string) (rules *RobotsRules, fetched bool, dur time.Duration, err error) {
	scheme, host = strings.ToLower(scheme), strings.ToLower(host)
	if scheme != "http" && scheme != "https" || host == "" || strings.ContainsAny(host, "/?#@ ") {
		return nil, false, 0, &classError{ErrBadURL, fmt.Errorf("robots: bad scheme %q or host %q", scheme, host), false, nil}
	}
	key := robotsKey(scheme, host)
	for {
		now := f.opts.Now()
		r, wait, mine, prev := f.robots.lookup(key, now)
		if r != nil {
			f.stats.robotsHits.add(1)
			return r, false, 0, nil
		}
		if !mine {
			select { // another caller is fetching this host
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, false, 0, ctx.Err()
			}
		}
		f.stats.robotsMisses.add(1)
		return f.fetchAndStore(ctx, key, prev)
	}
}

// fetchAndStore fetches the robots.txt of key for a caller that holds its
// in-flight mark, resuming at prev's pending hop if prev is RobotsDeferred,
// and always releases the mark (even on panic). dur is the time of the
// requests to key's own host.
func (f *Fetcher) fetchAndStore(ctx context.Context, key string, prev *RobotsRules) (rules *RobotsRules, fetched bool, dur time.Duration, err error) {
	stored := false
	defer func() {
		if !stored {
			f.robots.abandon(key)
		}
	}()
	r, dur, sent, err := f.fetchRobots(ctx, key, prev)
	if err != nil {
		return nil, sent, dur, err
	}
	r = f.robots.store(key, r, f.opts.Now(), &f.opts, &f.stats)
	stored = true
	return r, sent, dur, nil
}

// CachedRobots returns the cached rules for scheme://host without fetching,
// or nil if a call to Robots would fetch.
func (f *Fetcher) CachedRobots(scheme, host string) *RobotsRules {
	return f.robots.peek(robotsKey(strings.ToLower(scheme), strings.ToLower(host)), f.opts.Now())
}

// robotsKey is the cache key of an origin: scheme://host with the scheme's
// default port dropped.
func robotsKey(scheme, host string) string {
	if scheme == "http" {
		host = strings.TrimSuffix(host, ":80")
	} else if scheme == "https" {
		host = strings.TrimSuffix(host, ":443")
	}
	return scheme + "://" + host
}

// fetchRobots fetches key+"/robots.txt" (or resumes at prev's pending hop),
// following up to RobotsMaxRedirects redirects, and classifies the outcome.
// A hop to another host takes that host's slot from RobotsHostGate first
// (see Options.RobotsHostGate). home is the time of the requests to key's
// own host, whose slot the caller holds; sent reports whether any request
// was sent (a resumed hop the gate refuses again sends none). It errs only
// when ctx ends or the gate cannot be used.
func (f *Fetcher) fetchRobots(ctx context.Context, key string, prev *RobotsRules) (_ *RobotsRules, home time.Duration, sent bool, _ error) {
	u, err := url.Parse(key + "/robots.txt")
	if err != nil {
		return nil, 0, false, &classError{ErrBadURL, err, false, nil}
	}
	self := politenessHost(u)
	hop, via, status := 0, "", 0 // status: of the last redirect
	if prev != nil && prev.Outcome == RobotsDeferred && prev.deferred != nil && prev.deferred.pending != nil {
		u, hop, via = prev.deferred.pending, prev.deferred.hop, prev.Redirect
	}
	selfSent := false // a request to key's own host went out in this call
	for ; ; hop++ {
		var release func(time.Duration, bool)
		if h := politenessHost(u); h == self && selfSent && f.opts.RobotsHostGate != nil {
			// A redirect on the host itself: the next hop waits for the
			// host's delay like any request to it (issue 25, defect 6:
			// chains went out 1–8 ms apart). The caller requeues with the
			// time spent so far; the next call resumes here.
			f.stats.robotsDeferred.add(1)
			return &RobotsRules{Outcome: RobotsDeferred, Redirect: via, deferred: &robotsHop{pending: u, hop: hop}}, home, sent, nil
		} else if h != self {
			if via == "" {
				via = u.String()
			}
			switch {
			case f.opts.RobotsHostGate != nil:
				rel, retry, ok, err := f.opts.RobotsHostGate.Acquire(self, u.String())
				if err != nil {
					return nil, home, sent, fmt.Errorf("robots: politeness slot of %s: %w", h, err)
				}
				if !ok {
					f.stats.robotsDeferred.add(1)
					return &RobotsRules{Outcome: RobotsDeferred, Redirect: via, deferred: &robotsHop{pending: u, hop: hop, retryAt: retry}}, home, sent, nil
				}
				release = rel
			case !f.opts.RobotsCrossHostRedirects:
				f.stats.robotsRefused.add(1)
				f.opts.Logger.Info("robots.txt: redirect to another host refused (no politeness gate for it); treated as unavailable",
					"robots", key+"/robots.txt", "target", u.String())
				return &RobotsRules{Outcome: RobotsAllowAll, Status: status, RefusedRedirect: u.String()}, home, sent, nil
			}
			f.stats.robotsCrossHops.add(1)
		}
		f.stats.robotsFetches.add(1)
		sent = true
		start := time.Now()
		resp, err := f.get(ctx, u, f.opts.BodyCap, f.opts.RobotsMaxBytes)
		d := time.Since(start)
		if release != nil {
			release(d, err != nil && ctx.Err() == nil || err == nil && resp.Status >= 500)
		} else {
			home += d
			selfSent = true
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, home, sent, classify(err, ctx)
			}
			if errors.Is(err, ErrPrivateAddress) {
				f.opts.Logger.Debug("robots.txt: private address refused", "url", u.String(), "err", err)
			} else {
				// The cause, by kind when it has one: an untrusted
				// certificate must not read as a mere outage.
				cause := "network"
				if k := Kind(err); k != nil {
					cause = k.Error()
				}
				f.opts.Logger.Info("robots.txt unreachable", "url", u.String(), "cause", cause,
					"permanent", robotsPermanent(err), "err", err)
			}
			return &RobotsRules{Outcome: RobotsUnreachable, Err: err, Redirect: via}, home, sent, nil
		}
		if f.opts.OnRobotsResponse != nil {
			resp.URL = u.String()
			f.opts.OnRobotsResponse(resp)
		}
		rules, next := f.robotsFromResponse(resp, u)
		resp.Close()
		status = resp.Status
		if next == nil {
			rules.Redirect = via
			return rules, home, sent, nil
		}
		if hop >= f.opts.RobotsMaxRedirects {
			f.opts.Logger.Debug("robots.txt: too many redirects", "url", key)
			return &RobotsRules{Outcome: RobotsAllowAll, Status: resp.Status, Redirect: via}, home, sent, nil
		}
		u = next
	}
}

// politenessHost is u's host name and non-default port, lower-case: the
// host politeness is kept for (the scheme does not matter).
func politenessHost(u *url.URL) string {
	h, p := strings.ToLower(u.Hostname()), u.Port()
	if p == "" || (p == "80" && u.Scheme == "http") || (p == "443" && u.Scheme == "https") {
		return h
	}
	return h + ":" + p
}

// robotsFromResponse classifies one response per RFC 9309 §2.3.1; next is
// the redirect target to follow, if any.
func (f *Fetcher) robotsFromResponse(resp *Response, u *url.URL) (*RobotsRules, *url.URL) {
	st := resp.Status
	switch {
	case st >= 200 && st < 300:
		body, err := io.ReadAll(resp.Body.NewReader())
		if err != nil {
			return &RobotsRules{Outcome: RobotsUnreachable, Status: st, Err: err}, nil
		}
		if resp.Truncated {
			// Parse only complete lines of the first RobotsMaxBytes.
			if i := bytes.LastIndexAny(body, "\r\n"); i >= 0 {
				body = body[:i+1]
			}
		}
		rf := parseRobots(body)
		return &RobotsRules{Outcome: RobotsParsed, Status: st, Truncated: resp.Truncated,
			Sitemaps: rf.sitemaps, rules: rf.forAgent(f.opts.RobotsToken)}, nil
	case st >= 300 && st < 400:
		if resp.Location != "" {
			if next, err := url.Parse(resp.Location); err == nil && (next.Scheme == "http" || next.Scheme == "https") {
				return nil, next
			}
		}
		return &RobotsRules{Outcome: RobotsAllowAll, Status: st}, nil
	case st >= 400 && st < 500:
		return &RobotsRules{Outcome: RobotsAllowAll, Status: st}, nil
	}
	return &RobotsRules{Outcome: RobotsUnreachable, Status: st, Err: fmt.Errorf("robots.txt status %d", st)}, nil
}

// robotsPermanent reports whether a robots.txt failure is a verdict that
// an attempt seconds later would repeat: a refused address or a TLS
// failure other than a timeout.
func robotsPermanent(err error) bool {
	return errors.Is(err, ErrPrivateAddress) || errors.Is(err, ErrTLS)
}
