package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// A number written into the template's text, outside a template action, is
// not computed from the data. Each one must be on this list with the reason
// it may stand: a figure quoted from the paper or the issue, a run parameter
// (checked against the file that sets it), or a fact of the code. Numbers
// that are part of the document's structure (section, issue and list
// numbers) and the parameters in code (fenced blocks and `spans`, each of
// which must appear as a word in study/run.sh) pass by rule.
type literal struct {
	token   string // the number as written ("2^14", "16 384", "19.5")
	context string // a piece of its line (actions replaced by ⁂)
	reason  string
	// file (from the repository root) must contain contains: the fact the
	// number states, where the repository sets it.
	file, contains string
}

const (
	paper   = "quoted from the paper (Broder, Najork & Wiener, as digested in the team's PAPERS.md §2)"
	issue   = "quoted from issue 30, not data of this study"
	runsh   = "a run parameter of study/run.sh"
	code    = "a constant of the code, checked in the named file"
	example = "arithmetic of the sentence's own inputs"
)

var allowedLiterals = []literal{
	// The paper's figures, quoted beside ours.
	{"4", "a 4-machine Mercator crawl", paper, "", ""},
	{"70", "70%: Sextant drops", paper, "", ""},
	{"70", "instead of 70% because", paper, "", ""},
	{"19.5", "(the paper: 19.5%)", paper, "", ""},
	{"30", "about 30% intra-page repeats", paper, "", ""},
	{"2^14", "at 2^14–2^18. Our first plateau", paper, "", ""},
	{"2^18", "at 2^14–2^18. Our first plateau", paper, "", ""},
	{"50 000", "about 50 000 entries", paper, "", ""},
	{"80", "hit rate of almost 80%", paper, "", ""},
	{"100", `"100–500 entries`, paper, "", ""},
	{"500", `"100–500 entries`, paper, "", ""},
	// The issue's figures, which the study does not reproduce.
	{"68.3", "this study: 68.3%, 75.6%, 87.4%)", issue, "", ""},
	{"75.6", "this study: 68.3%, 75.6%, 87.4%)", issue, "", ""},
	{"87.4", "this study: 68.3%, 75.6%, 87.4%)", issue, "", ""},
	{"2", "issue's 2 × 10⁶", issue, "", ""},
	{"10", "issue's 2 × 10⁶", issue, "", ""},
	// The large crawl's configuration that crawl-summary.json does not carry.
	{"4096", "4096-entry per-peer caches", code, "internal/crawl/defaults.go", "PeerCacheSize: 4096,"},
	// The other runs' parameters.
	{"2 000", "crawls simweb (2 000 hosts, 100 000 articles", runsh, "study/run.sh", "order --hosts 2000 --pages 100000"},
	{"100 000", "crawls simweb (2 000 hosts, 100 000 articles", runsh, "study/run.sh", "order --hosts 2000 --pages 100000"},
	{"256", "a host fetched again only 256 fetches", runsh, "study/run.sh", "for p in 0 256"},
	{"6", "[simweb NavLinks 6]", runsh, "study/run.sh", `"nav6:6 0 0 0"`},
	{"14", "(`LinksMedian 14,", runsh, "study/run.sh", `"wiki-like:6 0.85 14 22"`},
	{"22", "LinksMean 22`)", runsh, "study/run.sh", `"wiki-like:6 0.85 14 22"`},
	{"3", "of a live 3-node crawl", runsh, "study/tracecrawl/main.go", `flag.Int("nodes", 3,`},
	{"2 000", "2 000 hosts and 50 000 articles", runsh, "study/run.sh", "--hosts 2000 --pages 50000"},
	{"50 000", "2 000 hosts and 50 000 articles", runsh, "study/run.sh", "--hosts 2000 --pages 50000"},
	{"10", "hosts × 10 pages (about", runsh, "study/run.sh", "--hosts 1000 --pages 10000"},
	{"30", "hosts × 30 pages (about", runsh, "study/run.sh", "--hosts 100 --pages 3000"},
	{"10", "simulated one (10 pages per", runsh, "study/run.sh", "--hosts 1000 --pages 10000"},
	{"50", "host instead of 50,", example + ": 100 000 articles over 2 000 hosts", "study/run.sh", "--hosts 2000 --pages 100000"},
	// Facts of the code.
	{"64", "uses: 64 shards of k/64)", code, "cache/shared.go", "shards = 64"},
	{"64", "`NewShared` (64 shards)", code, "cache/shared.go", "shards = 64"},
	{"64", "(64 independent shards", code, "cache/shared.go", "shards = 64"},
	{"8", "drawn from a pool of 8 per article", code, "simweb/config.go", "drawn from a pool of 8 per"},
	{"404", "pages that answer 404)", "the HTTP status of a MediaWiki red link", "", ""},
	{"404", "go to pages that answer 404,", code, "simweb/config.go", "(404)"},
	{"0.5", "the ±0.5-point bound", code, "cache/cache_test.go", "points, bound 0.5"},
	{"10", "(factor 10: a host", code, "frontier/options.go", "o.Factor = 10"},
	{"11", "about one time in 11)", example + ": a delay of 10 fetch times after each fetch", "frontier/options.go", "o.Factor = 10"},
	{"1", "steals per fetch may exceed 1.", "a ratio's bound, not a measurement", "", ""},
	// The machine the study ran on.
	{"2", "on the shared 2-core machine (1-minute", "the machine's core count (the briefs' shared 2-core host), not data", "", ""},
	{"1", "2-core machine (1-minute load average", "the load average's 1-minute window (/proc/loadavg's first field)", "study/tracecrawl/main.go", "/proc/loadavg"},
	{"2", "on the shared, loaded 2-core", "the machine's core count, not data", "", ""},
	{"2", "runs on a loaded 2-core machine", "the machine's core count, not data", "", ""},
	{"2", "over all goroutines on the 2 cores", "the machine's core count, not data", "", ""},
	{"2", "from a shared 2-core machine", "the machine's core count, not data", "", ""},
	{"2", "goroutines on the 2 cores the shared", "the machine's core count, not data", "", ""},
	{"1", "over k = 1 … ⁂", "the smallest size simulated, the range's bound", "", ""},
}

// structural numbers: headings, list items, cross-references.
var (
	actionRE  = regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	numberRE  = regexp.MustCompile(`\d+(?:[  ]\d{3})*(?:\.\d+)?(?:\^\d+)?`)
	identPre  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*[-_.]?|[0-9.^])$`)
	identPost = regexp.MustCompile(`^([A-Za-z_]|\.\d)`)
	crossRef  = regexp.MustCompile(`(?i)(sections?|issues?|points?|items?|runs?|§)\s*(\d+\s*(and|,)\s*)?$`)
	bareRE    = regexp.MustCompile(`\{\{-?\s*[0-9][0-9.]*\s*-?\}\}`)
	listItem  = regexp.MustCompile(`^\s*(#+\s*)?$`)
	codeSpan  = regexp.MustCompile("`[^`]*`")
)

// literalNumber is one number in the template's text.
type literalNumber struct {
	token, line string
	lineNo      int
	inCode      bool
}

// templateLiterals lists the numbers of the template outside its actions.
func templateLiterals(src string) []literalNumber {
	var out []literalNumber
	fenced := false
	for i, line := range strings.Split(actionRE.ReplaceAllString(src, "⁂"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		spans := codeSpan.FindAllStringIndex(line, -1)
		for _, m := range numberRE.FindAllStringIndex(line, -1) {
			pre, post := line[:m[0]], line[m[1]:]
			if identPre.MatchString(pre) || identPost.MatchString(post) || crossRef.MatchString(pre) {
				continue
			}
			if listItem.MatchString(pre) && strings.HasPrefix(post, ". ") {
				continue
			}
			in := fenced
			for _, s := range spans {
				in = in || (m[0] > s[0] && m[1] < s[1])
			}
			out = append(out, literalNumber{line[m[0]:m[1]], line, i + 1, in})
		}
	}
	return out
}

// The template states no number the data does not give, except the
// allowlisted ones above, each with its reason.
func TestNoUngeneratedNumbers(t *testing.T) {
	src, err := os.ReadFile("caching-study.md.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	runSh, err := os.ReadFile("../run.sh")
	if err != nil {
		t.Fatal(err)
	}
	// {{8}} prints a literal: it is text in disguise.
	for _, m := range bareRE.FindAllString(string(src), -1) {
		t.Errorf("template prints the literal %s: write it as text (and allowlist it) or compute it", m)
	}
	used := make([]bool, len(allowedLiterals))
	for _, n := range templateLiterals(string(src)) {
		if n.inCode {
			w := regexp.MustCompile(`(^|[^0-9.])` + regexp.QuoteMeta(strings.ReplaceAll(n.token, " ", "")) + `($|[^0-9.])`)
			if !w.Match(runSh) {
				t.Errorf("template line %d: %q in code is not a parameter of study/run.sh: %s", n.lineNo, n.token, n.line)
			}
			continue
		}
		ok := false
		for i, a := range allowedLiterals {
			if a.token == n.token && strings.Contains(n.line, a.context) {
				ok, used[i] = true, true
			}
		}
		if !ok {
			t.Errorf("template line %d: %q is not generated (write it as a template action, or allowlist it with its reason): %s", n.lineNo, n.token, n.line)
		}
	}
	for i, a := range allowedLiterals {
		if !used[i] {
			t.Errorf("allowlisted %q (%q) no longer in the template: remove it", a.token, a.context)
		}
		if a.reason == "" {
			t.Errorf("allowlisted %q has no reason", a.token)
		}
		if a.file != "" {
			b, err := os.ReadFile("../../" + a.file)
			if err != nil || !strings.Contains(string(b), a.contains) {
				t.Errorf("allowlisted %q: %s does not say %q (%v)", a.token, a.file, a.contains, err)
			}
		}
	}
}

func TestTemplateLiterals(t *testing.T) {
	src := "## 5. Title (issue 30)\n1. At 2^14 {{pct 0.5}} in run 2 of 16 384, node-0 and `--polite 256`; sections 3 and 4\n```sh\nrun --k 25\n```\n"
	var got []string
	for _, n := range templateLiterals(src) {
		got = append(got, n.token)
		if n.inCode != (n.token == "256" || n.token == "25") {
			t.Errorf("%q: inCode %v", n.token, n.inCode)
		}
	}
	if strings.Join(got, ",") != "2^14,16 384,256,25" {
		t.Errorf("literals = %q", got)
	}
}

// Every results.csv that study/run.sh makes with $ALGOS holds every policy
// of $ALGOS: a CSV made by another command (the first study's polite-order
// CSVs held only lru, min and static) fails here.
func TestCSVsHoldEveryPolicy(t *testing.T) {
	runSh, err := os.ReadFile("../run.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ALGOS=(\S+)$`).FindSubmatch(runSh)
	if m == nil {
		t.Fatal("study/run.sh sets no ALGOS")
	}
	algos := strings.Split(string(m[1]), ",")
	dirs := []string{"order-bfs", "order-inlinks", "order-random", "order-polite-bfs", "order-polite-inlinks",
		"order-polite-random", "wiki", "simweb1-default", "simweb1-nav6", "simweb1-wiki-like"}
	if d := newData("../../docs/caching-study"); d.has("sweep-full/results.csv", "clock-exact") {
		dirs = append(dirs, "sweep-full", "sweep-cross") // regenerated with $ALGOS
	}
	d := newData("../../docs/caching-study")
	for _, dir := range dirs {
		for _, a := range algos {
			if !d.has(dir+"/results.csv", a) {
				t.Errorf("docs/caching-study/%s/results.csv has no %s: not made by study/run.sh", dir, a)
			}
		}
	}
}
