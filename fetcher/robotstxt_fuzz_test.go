package fetcher

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzRobots parses arbitrary robots.txt bodies and matches arbitrary paths:
// no panic, output bounded by the input, and results deterministic.
func FuzzRobots(f *testing.F) {
	for _, c := range ctcCases {
		f.Add(c.robots, robotsPath(c.url), c.agent)
	}
	f.Add(sampleRobots, "/private/ok", "sextant")
	f.Add("\xef\xbb\xbfuser-agent: *\r\ndisallow: /*$*$\rallow: /%e3%83%84\n", "/%E3%83%84", "x")
	f.Fuzz(func(t *testing.T, body, path, agent string) {
		if len(body) > 64<<10 || len(path) > 4<<10 {
			t.Skip()
		}
		rf := parseRobots([]byte(body))
		rules := 0
		for _, g := range rf.groups {
			rules += len(g.rules)
			for _, r := range g.rules {
				if len(r.pattern) > 3*maxRobotsLine {
					t.Fatalf("pattern of %d bytes", len(r.pattern))
				}
			}
		}
		if lines := strings.Count(body, "\n") + strings.Count(body, "\r") + 1; rules > lines || len(rf.groups) > lines {
			t.Fatalf("%d rules, %d groups from %d lines", rules, len(rf.groups), lines)
		}
		ar := rf.forAgent(agent)
		if p := robotsPath(path); p == "" || p[0] != '/' || strings.Contains(p, "#") {
			t.Fatalf("robotsPath(%q) = %q", path, p)
		}
		path = robotsPath(path)
		a1 := ar.allowed(path)
		if a2 := parseRobots([]byte(body)).forAgent(agent); a2.allowed(path) != a1 {
			t.Fatal("nondeterministic")
		}
		if len(ar.rules) == 0 && !a1 {
			t.Fatal("disallowed without rules")
		}
	})
}

// FuzzMatchPattern checks matchPattern against a regexp translation of the
// same pattern ('*' → ".*", final '$' → end anchor, prefix match).
func FuzzMatchPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"/fish*.php", "/fishheads/catfish.php?x"}, {"/*.php$", "/a.php"}, {"/$", "/"},
		{"/a$b", "/a$b"}, {"*", ""}, {"/**x*$", "/yyx"}, {"$", ""}, {"/a*", "/b"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if len(pattern) > 256 || len(path) > 1024 {
			t.Skip()
		}
		var re strings.Builder
		re.WriteString(`^`)
		for i := 0; i < len(pattern); i++ {
			switch c := pattern[i]; {
			case c == '*':
				re.WriteString(`(?s:.*)`)
			case c == '$' && i == len(pattern)-1:
				re.WriteString(`\z`)
			default:
				re.WriteString(regexp.QuoteMeta(string(rune(c)))) // byte as Latin-1 rune
			}
		}
		// Match bytes, not runes: map each byte to a rune of the same value.
		want := regexp.MustCompile(re.String()).MatchString(latin1(path))
		if got := matchPattern(path, pattern); got != want {
			t.Fatalf("matchPattern(%q, %q) = %v, regexp says %v", path, pattern, got, want)
		}
	})
}

func latin1(s string) string {
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}
