package frontier

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestPoliteness drives the scheduler core through testdata/politeness with
// explicit times and prints ASCII timelines: per host one character per
// step, L while a fetch is in flight, - while it rests before the next fetch
// may start.
func TestPoliteness(t *testing.T) {
	datadriven.RunTest(t, "testdata/politeness", func(t *testing.T, d *datadriven.TestData) string {
		return runPolitenessCmd(t, d)
	})
}

type polTest struct {
	opts   Options
	s      *scheduler
	queued map[string]int // URLs left per host
	events map[string][]span
}

type span struct {
	from, to time.Time
	c        byte
}

var epoch = time.Unix(1_700_000_000, 0)

var pt *polTest

func durArg(t *testing.T, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			v, err := time.ParseDuration(a.Vals[0])
			if err != nil {
				t.Fatalf("%s: %v", d.Pos, err)
			}
			return v
		}
	}
	return def
}

func strArg(d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return a.Vals[0]
		}
	}
	return ""
}

func runPolitenessCmd(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "init":
		o := Options{
			Factor:            10,
			MinDelay:          durArg(t, d, "min", 0),
			MaxDelay:          durArg(t, d, "max", time.Minute),
			MaxCrawlDelay:     durArg(t, d, "max-crawl", 0),
			FailureBackoff:    durArg(t, d, "backoff", 0),
			MaxFailureBackoff: durArg(t, d, "max-backoff", 0),
			BorrowHold:        durArg(t, d, "hold", 0),
			BorrowPoll:        durArg(t, d, "poll", 0),
		}
		if f := strArg(d, "factor"); f != "" {
			o.Factor, _ = strconv.ParseFloat(f, 64)
		}
		o.EnsureDefaults()
		if err := o.Validate(); err != nil {
			return err.Error()
		}
		pt = &polTest{opts: o, queued: map[string]int{}, events: map[string][]span{}}
		pt.s = newScheduler(&pt.opts)
		return ""
	case "add":
		// add host=a urls=3 [t=...]: activates the host if needed.
		host := strArg(d, "host")
		n, _ := strconv.Atoi(strArg(d, "urls"))
		h := pt.s.hosts[host]
		if h == nil {
			h = pt.s.activate(host, epoch.Add(durArg(t, d, "next", 0)), 0)
		}
		pt.queued[host] += n
		pt.s.setQueued(h, pt.queued[host] > 0)
		return ""
	case "next":
		now := epoch.Add(durArg(t, d, "t", 0))
		h, wake := pt.s.pop(now)
		if h == nil {
			if wake.IsZero() {
				return "none"
			}
			return "wait until " + wake.Sub(epoch).String()
		}
		pt.queued[h.name]--
		h.queued = pt.queued[h.name] > 0
		pt.events[h.name] = append(pt.events[h.name], span{from: now, c: 'L'})
		return h.name
	case "done":
		now := epoch.Add(durArg(t, d, "t", 0))
		host := strArg(d, "host")
		h := pt.s.hosts[host]
		if h == nil || !h.leased {
			return "no lease on " + host
		}
		// "done" also ends a borrow ("return").
		r := Result{Duration: durArg(t, d, "dur", 0), CrawlDelay: durArg(t, d, "crawl-delay", 0)}
		r.Failed = d.HasArg("failed")
		return pt.complete(h, now, r)
	case "borrow":
		// borrow host=b t=...: as Frontier.Borrow (an unknown host is
		// activated for the call, and retired again if refused).
		now := epoch.Add(durArg(t, d, "t", 0))
		host := strArg(d, "host")
		h := pt.s.hosts[host]
		if h == nil {
			h = pt.s.activate(host, epoch.Add(durArg(t, d, "next", 0)), 0)
		}
		ok, retry := pt.s.borrow(h, now)
		if !ok {
			if !h.queued && !h.leased {
				pt.s.deactivate(h)
			}
			return fmt.Sprintf("%s refused: retry=%s next=%s", host, retry.Sub(epoch), h.next.Sub(epoch))
		}
		pt.events[host] = append(pt.events[host], span{from: now, c: 'B'})
		return host + " granted"
	case "sim":
		return pt.sim(t, d)
	case "timeline":
		return pt.timeline(durArg(t, d, "step", 10*time.Millisecond), durArg(t, d, "until", time.Second))
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		return ""
	}
}

func (p *polTest) complete(h *hostState, now time.Time, r Result) string {
	ev := p.events[h.name]
	ev[len(ev)-1].to = now
	p.s.complete(h, now, r)
	p.events[h.name] = append(ev, span{from: now, to: h.next, c: '-'})
	out := fmt.Sprintf("%s next=%s failures=%d", h.name, h.next.Sub(epoch), h.failures)
	if !h.queued {
		p.s.deactivate(h)
		out += " (inactive)"
	}
	return out
}

// sim runs workers against the scheduler: each host's fetches take a fixed
// time (fetch=a:20ms,b:5ms; fail=a makes a's fetches fail; crawl-delay=a:1s).
// It checks the politeness invariants as it goes and prints the schedule.
func (p *polTest) sim(t *testing.T, d *datadriven.TestData) string {
	workers, _ := strconv.Atoi(strArg(d, "workers"))
	fetch := map[string]time.Duration{}
	for _, kv := range strings.Split(strArg(d, "fetch"), ",") {
		k, v, _ := strings.Cut(kv, ":")
		fetch[k], _ = time.ParseDuration(v)
	}
	crawlDelay := map[string]time.Duration{}
	if cd := strArg(d, "crawl-delay"); cd != "" {
		for _, kv := range strings.Split(cd, ",") {
			k, v, _ := strings.Cut(kv, ":")
			crawlDelay[k], _ = time.ParseDuration(v)
		}
	}
	failing := map[string]bool{}
	for _, h := range strings.Split(strArg(d, "fail"), ",") {
		failing[h] = true
	}
	type running struct {
		h   *hostState
		end time.Time
	}
	var run []running
	var log strings.Builder
	now := epoch
	lastEnd := map[string]time.Time{}
	for steps := 0; steps < 10000; steps++ {
		for len(run) < workers {
			h, _ := p.s.pop(now)
			if h == nil {
				break
			}
			for _, r := range run {
				if r.h == h {
					t.Fatalf("two leases on %s", h.name)
				}
			}
			if e, ok := lastEnd[h.name]; ok && now.Before(e) {
				t.Fatalf("%s fetched at %v before its delay ended", h.name, now.Sub(epoch))
			}
			p.queued[h.name]--
			h.queued = p.queued[h.name] > 0
			p.events[h.name] = append(p.events[h.name], span{from: now, c: 'L'})
			fmt.Fprintf(&log, "%6s start %s\n", now.Sub(epoch), h.name)
			run = append(run, running{h, now.Add(fetch[h.name])})
		}
		// Advance to the next event: a fetch ending or a host becoming ready.
		next := p.s.peek()
		if len(run) > 0 {
			sort.Slice(run, func(i, j int) bool { return run[i].end.Before(run[j].end) })
			if next.IsZero() || run[0].end.Before(next) || len(run) == workers {
				next = run[0].end
			}
		}
		if next.IsZero() {
			break
		}
		if next.After(now) {
			now = next
		}
		for len(run) > 0 && !run[0].end.After(now) {
			h := run[0].h
			run = run[1:]
			r := Result{Duration: fetch[h.name], CrawlDelay: crawlDelay[h.name], Failed: failing[h.name]}
			fmt.Fprintf(&log, "%6s done  %s\n", now.Sub(epoch), p.complete(h, now, r))
			lastEnd[h.name] = h.next
		}
	}
	if d.HasArg("log") {
		return log.String()
	}
	return ""
}

func (p *polTest) timeline(step, until time.Duration) string {
	var hosts []string
	for h := range p.events {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var b strings.Builder
	n := int(until / step)
	for _, h := range hosts {
		row := []byte(strings.Repeat(" ", n))
		for _, sp := range p.events[h] {
			for i := 0; i < n; i++ {
				at := epoch.Add(time.Duration(i) * step)
				if !at.Before(sp.from) && (at.Before(sp.to) || sp.to.IsZero() && sp.c == 'L') {
					row[i] = sp.c
				}
			}
		}
		fmt.Fprintf(&b, "%-3s|%s|\n", h, strings.TrimRight(string(row), " "))
	}
	return b.String()
}
