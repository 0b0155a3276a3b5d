package fetcher

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// This file is the RFC 9309 layer: a robots.txt parser and matcher with the
// grouping, user-agent matching and precedence rules of the RFC (and the
// accepted mistakes of Google's reference parser, on which the compliance
// suite is based). github.com/temoto/robotstxt, the library issue 5 names,
// differs from RFC 9309 in ways that cannot be patched from outside, because
// its groups and rules are unexported:
//
//   - a rule before the first user-agent line, or an unparsable
//     crawl-delay, makes FromBytes fail for the whole file;
//   - user-agent matching is by prefix of the crawler's name, not equality
//     with the product token of the line;
//   - ties between an allow and a disallow rule of equal length go to the
//     first rule in the file, not to allow;
//   - the length of a wildcard rule is that of its compiled regexp;
//   - non-ASCII rule paths are not percent-encoded before matching;
//   - values are split at white space, so a path containing a space breaks.
//
// So groups and rules are parsed here, following RFC 9309 and the reference
// parser's documented leniencies; ctc_test.go runs Google's compliance suite
// against both this layer and bare temoto, to keep the reasons measurable.

// maxRobotsLine is the longest line kept, as in Google's parser (2083*8).
const maxRobotsLine = 2083 * 8

// robotsRule is one allow or disallow record.
type robotsRule struct {
	pattern string // percent-encoded as matched
	allow   bool
	literal int // bytes of pattern other than '*' and a final '$': the shortest path it can match
}

func newRobotsRule(value string, allow bool) robotsRule {
	p := escapePattern(value)
	lit := len(p) - strings.Count(p, "*")
	if strings.HasSuffix(p, "$") {
		lit--
	}
	return robotsRule{pattern: p, allow: allow, literal: lit}
}

// robotsGroup is one group: its user-agent lines and its rules.
type robotsGroup struct {
	agents     []string // product tokens, lower-case; "*" for the global group
	rules      []robotsRule
	crawlDelay time.Duration // -1 if absent
}

// robotsFile is a parsed robots.txt.
type robotsFile struct {
	groups   []robotsGroup
	sitemaps []string
}

// parseRobots parses body per RFC 9309 §2.2. It never fails: unparsable
// lines are ignored.
func parseRobots(body []byte) *robotsFile {
	body = skipBOM(body)
	rf := &robotsFile{}
	var cur *robotsGroup
	inRules := false // a rule has been seen since the last user-agent line
	forEachLine(body, func(line []byte) {
		key, value, ok := splitRecord(line)
		if !ok {
			return
		}
		switch keyKind(key) {
		case keyUserAgent:
			if cur == nil || inRules {
				rf.groups = append(rf.groups, robotsGroup{crawlDelay: -1})
				cur = &rf.groups[len(rf.groups)-1]
				inRules = false
			}
			cur.agents = append(cur.agents, agentToken(value))
		case keyAllow, keyDisallow:
			if cur == nil {
				return // rules outside any group are ignored
			}
			inRules = true
			if value == "" {
				return // an empty path matches nothing
			}
			cur.rules = append(cur.rules, newRobotsRule(value, keyKind(key) == keyAllow))
		case keyCrawlDelay:
			if cur == nil {
				return
			}
			if d, err := strconv.ParseFloat(value, 64); err == nil && d >= 0 && d < 1e9 {
				cur.crawlDelay = max(cur.crawlDelay, time.Duration(d*float64(time.Second)))
			}
		case keySitemap:
			if len(rf.sitemaps) < 1000 {
				rf.sitemaps = append(rf.sitemaps, value)
			}
		}
	})
	return rf
}

// skipBOM drops a UTF-8 byte order mark, or a leading prefix of one.
func skipBOM(b []byte) []byte {
	bom := []byte{0xEF, 0xBB, 0xBF}
	i := 0
	for i < len(bom) && i < len(b) && b[i] == bom[i] {
		i++
	}
	return b[i:]
}

// forEachLine calls fn for each line (ending in LF, CR or CRLF), without
// its comment and surrounding white space, truncated to maxRobotsLine.
func forEachLine(b []byte, fn func([]byte)) {
	for len(b) > 0 {
		var line []byte
		i := bytes.IndexAny(b, "\r\n")
		switch {
		case i < 0:
			line, b = b, nil
		case b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n':
			line, b = b[:i], b[i+2:]
		default:
			line, b = b[:i], b[i+1:]
		}
		if len(line) > maxRobotsLine {
			line = line[:maxRobotsLine]
		}
		if j := bytes.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		fn(bytes.Trim(line, " \t"))
	}
}

// splitRecord splits "key: value". As Google's parser does, it accepts white
// space instead of the colon when the line holds exactly two words.
func splitRecord(line []byte) (key, value string, ok bool) {
	k, v, found := bytes.Cut(line, []byte(":"))
	if !found {
		i := bytes.IndexAny(line, " \t")
		if i < 0 {
			return "", "", false
		}
		k, v = line[:i], bytes.TrimLeft(line[i:], " \t")
		if bytes.ContainsAny(v, " \t") {
			return "", "", false
		}
	}
	k = bytes.Trim(k, " \t")
	if len(k) == 0 {
		return "", "", false
	}
	return string(k), string(bytes.Trim(v, " \t")), true
}

type recordKey int

const (
	keyUnknown recordKey = iota
	keyUserAgent
	keyAllow
	keyDisallow
	keySitemap
	keyCrawlDelay
)

// keyKind classifies a record key case-insensitively by prefix, accepting
// the frequent typos Google's parser accepts.
func keyKind(key string) recordKey {
	k := strings.ToLower(key)
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("user-agent", "useragent", "user agent"):
		return keyUserAgent
	case has("allow"):
		return keyAllow
	case has("disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"):
		return keyDisallow
	case has("sitemap", "site-map"):
		return keySitemap
	case has("crawl-delay", "crawldelay", "crawl delay"):
		return keyCrawlDelay
	}
	return keyUnknown
}

// agentToken returns the product token of a user-agent value (RFC 9309
// §2.2.1: the leading run of a-zA-Z_-), lower-case; "*" for the global
// group ("*" alone or followed by white space).
func agentToken(v string) string {
	if v == "*" || strings.HasPrefix(v, "* ") || strings.HasPrefix(v, "*\t") {
		return "*"
	}
	i := 0
	for i < len(v) && isTokenByte(v[i]) {
		i++
	}
	return strings.ToLower(v[:i])
}

// escapePattern percent-encodes the bytes of p outside ASCII and upper-cases
// the hex digits of existing escapes, so that patterns compare with the
// percent-encoded paths of URLs (RFC 9309 §2.2.2).
func escapePattern(p string) string {
	need := false
	for i := 0; i < len(p); i++ {
		if p[i] >= 0x80 || p[i] == '%' {
			need = true
			break
		}
	}
	if !need {
		return p
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]):
			b.WriteByte('%')
			b.WriteByte(upperHex(p[i+1]))
			b.WriteByte(upperHex(p[i+2]))
			i += 2
		case c >= 0x80:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func upperHex(c byte) byte {
	if c >= 'a' && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}

// agentRules are the rules of a file that apply to one product token: the
// merged groups naming it, or else the merged global groups (RFC 9309
// §2.2.1).
type agentRules struct {
	rules      []robotsRule
	crawlDelay time.Duration // -1 if none
	specific   bool          // a group named the token
}

func (rf *robotsFile) forAgent(token string) agentRules {
	token = strings.ToLower(token)
	var spec, glob agentRules
	spec.crawlDelay, glob.crawlDelay = -1, -1
	for gi := range rf.groups {
		g := &rf.groups[gi]
		for _, a := range g.agents {
			switch {
			case a != "" && a == token:
				spec.specific = true
				spec.rules = append(spec.rules, g.rules...)
				spec.crawlDelay = max(spec.crawlDelay, g.crawlDelay)
			case a == "*":
				glob.rules = append(glob.rules, g.rules...)
				glob.crawlDelay = max(glob.crawlDelay, g.crawlDelay)
			default:
				continue
			}
			break // a group counts once even if it names the agent twice
		}
	}
	if spec.specific {
		return spec
	}
	return glob
}

// allowed applies the longest-match rule: the matching rule with the
// longest pattern decides, and allow wins a tie (RFC 9309 §2.2.2). No
// matching rule means allowed. path is the percent-encoded path and query.
func (ar *agentRules) allowed(path string) bool {
	if path == "/robots.txt" {
		return true // implicitly allowed, RFC 9309 §2.2.2
	}
	bestAllow, bestDisallow := -1, -1
	for _, r := range ar.rules {
		n := len(r.pattern)
		if r.allow && n <= bestAllow || !r.allow && n <= bestDisallow {
			continue
		}
		if r.literal > len(path) && !(r.allow && strings.Contains(r.pattern, "/index.htm")) {
			continue // cannot match: cheap reject of hostile wildcard runs
		}
		if matchPattern(path, r.pattern) || r.allow && matchIndexPage(path, r.pattern) {
			if r.allow {
				bestAllow = n
			} else {
				bestDisallow = n
			}
		}
	}
	return bestAllow >= bestDisallow
}

// matchIndexPage is a Google-specific rule: "Allow: /dir/index.html" (or
// .htm) also allows "/dir/".
func matchIndexPage(path, pattern string) bool {
	i := strings.LastIndexByte(pattern, '/')
	if i < 0 || !strings.HasPrefix(pattern[i:], "/index.htm") {
		return false
	}
	return matchPattern(path, pattern[:i+1]+"$")
}

// matchPattern reports whether pattern matches a prefix of path, where '*'
// matches any run of bytes and a final '$' anchors the end. Between
// wildcards the leftmost occurrence of each literal segment is taken
// (greedy glob matching), so a hostile pattern costs at most one scan of
// path per segment instead of the quadratic position sets of a naive
// matcher.
func matchPattern(path, pattern string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	if !strings.Contains(pattern, "*") {
		if anchored {
			return path == pattern
		}
		return strings.HasPrefix(path, pattern)
	}
	first := strings.IndexByte(pattern, '*')
	if !strings.HasPrefix(path, pattern[:first]) {
		return false
	}
	pos := first
	rest := pattern[first+1:]
	for {
		i := strings.IndexByte(rest, '*')
		if i < 0 {
			break
		}
		seg := rest[:i]
		j := strings.Index(path[pos:], seg)
		if j < 0 {
			return false
		}
		pos += j + len(seg)
		rest = rest[i+1:]
	}
	// rest is the last segment, after the last '*'.
	if anchored {
		return len(path)-pos >= len(rest) && strings.HasSuffix(path, rest)
	}
	return strings.Contains(path[pos:], rest)
}

// robotsPath returns the part of rawURL that robots.txt rules match: the
// path and query, as written (not decoded), "/" if empty; the fragment
// dropped.
func robotsPath(rawURL string) string {
	s := rawURL
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
		j := strings.IndexAny(s, "/?")
		if j < 0 {
			return "/"
		}
		s = s[j:]
	}
	if s == "" {
		return "/"
	}
	if s[0] != '/' {
		s = "/" + s
	}
	return s
}
