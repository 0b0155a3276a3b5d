package simweb

import (
	"fmt"
	"sort"
	"strings"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// LinkStats describes the links of a sample of HTML pages.
type LinkStats struct {
	Pages          int     // HTML pages sampled
	MedianOut      float64 // links per page (with repeats)
	MeanOut        float64
	MedianUnique   float64 // distinct link targets per page
	MeanUnique     float64
	SameHostShare  float64 // share of links to the page's own host
	RepeatShare    float64 // share of a page's links that repeat an earlier one
	MedianBodySize float64 // bytes
}

// Summary is the shape of a web: what `crawler simweb` and `crawler demo`
// print.
type Summary struct {
	Seed        uint64
	Hosts       int
	Articles    int64 // HTML articles on non-trap hosts
	Reachable   int   // the oracle's exact fetched set from Seeds under default Rules
	TrapHosts   int   // trap hosts reached (≤ budget URLs each)
	Budget      int   // the default per-host budget
	Disallowed  int
	ByStatus    map[int]int
	Pathologies map[Pathology]int // hosts per pathology
	Seeds       []string
	Links       LinkStats
}

// Describe computes the shape of w: the oracle from w.Seeds() under default
// Rules and link statistics over up to 2 000 of the reachable HTML pages.
func Describe(w *Web) (Summary, error) {
	res, err := w.Oracle(w.Seeds(), Rules{})
	if err != nil {
		return Summary{}, err
	}
	s := Summary{Seed: w.cfg.Seed, Hosts: len(w.hosts), Articles: w.pages, Reachable: len(res.Fetched),
		TrapHosts: len(res.TrapHosts), Budget: res.Rules.MaxPagesPerHost, Disallowed: res.Disallowed,
		ByStatus: res.ByStatus, Pathologies: map[Pathology]int{}, Seeds: w.Seeds()}
	for p := Pathology(1); p < numPathologies; p++ {
		if n := len(w.byKind[p]); n > 0 {
			s.Pathologies[p] = n
		}
	}
	step := max(1, len(res.Fetched)/2000)
	var sample []string
	for i := 0; i < len(res.Fetched); i += step {
		sample = append(sample, res.Fetched[i])
	}
	s.Links = w.LinkStats(sample)
	return s, nil
}

// LinkStats measures the links of those urls that are 200 HTML articles,
// home pages or special HTML pages (not directory indexes or small pages).
func (w *Web) LinkStats(urls []string) LinkStats {
	var out, uniq, sizes []float64
	var links, same, repeats int
	for _, s := range urls {
		u, err := whatwg.Parse(s)
		if err != nil {
			continue
		}
		h, ok := w.HostIndex(u.Hostname())
		if !ok {
			continue
		}
		t := w.parse(int32(h), pathQuery(u))
		if t.kind != pkArticle && t.kind != pkHome {
			continue
		}
		r, err := w.Respond(u.Hostname(), pathQuery(u))
		if err != nil || r.Status != 200 || w.hosts[h].kind == Trap {
			continue
		}
		seen := map[string]bool{}
		for _, l := range r.Links {
			links++
			if rest, ok := strings.CutPrefix(l.URL, "http"); ok &&
				strings.HasPrefix(strings.TrimPrefix(rest, "s"), "://"+u.Hostname()+"/") {
				same++
			}
			if seen[l.URL] {
				repeats++
			}
			seen[l.URL] = true
		}
		out = append(out, float64(len(r.Links)))
		uniq = append(uniq, float64(len(seen)))
		sizes = append(sizes, float64(r.Size))
	}
	st := LinkStats{Pages: len(out), MedianOut: median(out), MeanOut: mean(out),
		MedianUnique: median(uniq), MeanUnique: mean(uniq), MedianBodySize: median(sizes)}
	if links > 0 {
		st.SameHostShare = float64(same) / float64(links)
		st.RepeatShare = float64(repeats) / float64(links)
	}
	return st
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// String formats the summary for people.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "simweb seed %d: %d hosts, %d articles; the oracle fetches %d URLs from %d seeds",
		s.Seed, s.Hosts, s.Articles, s.Reachable, len(s.Seeds))
	fmt.Fprintf(&b, " (+ ≤ %d on each of %d trap hosts; %d disallowed by robots.txt)\n", s.Budget, s.TrapHosts, s.Disallowed)
	var codes []int
	for c := range s.ByStatus {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	b.WriteString("  statuses:")
	for _, c := range codes {
		fmt.Fprintf(&b, " %d×%d", c, s.ByStatus[c])
	}
	b.WriteString("\n  pathologies (hosts):")
	for p := Pathology(1); p < numPathologies; p++ {
		if n := s.Pathologies[p]; n > 0 {
			fmt.Fprintf(&b, " %s=%d", p, n)
		}
	}
	l := s.Links
	fmt.Fprintf(&b, "\n  links per HTML page (%d sampled): median %.0f, mean %.1f; distinct median %.0f, mean %.1f;"+
		" same host %.0f%%, repeated %.0f%%; median page %.1f KB\n",
		l.Pages, l.MedianOut, l.MeanOut, l.MedianUnique, l.MeanUnique, 100*l.SameHostShare, 100*l.RepeatShare,
		l.MedianBodySize/1000)
	fmt.Fprintf(&b, "  seeds: %s\n", strings.Join(s.Seeds, " "))
	return b.String()
}
