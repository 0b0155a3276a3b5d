package crawl

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/internal/logging"
)

func TestCrawlLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log")
	l, err := OpenCrawlLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := []LogEntry{
		{Time: time.Date(2026, 11, 22, 3, 4, 5, 6e6, time.UTC), Node: "n1", URL: "http://a.sim.test/x", Status: 200,
			Outcome: "ok", Bytes: 1234, ContentType: "text/html; charset=utf-8", Duration: 12 * time.Millisecond, Links: 7},
		{Time: time.Date(2026, 11, 22, 3, 4, 6, 0, time.UTC), URL: "http://a.sim.test/r", Status: 301,
			Outcome: "redirect", Note: "http://b.sim.test/"},
	}
	for _, e := range in {
		if err := l.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A torn final line, as after kill -9 mid-write, is skipped.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("2026-11-22T03:04:07.000Z n1 200 5")
	f.Close()
	out, err := ReadLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("got %d entries, want 2", len(out))
	}
	if out[0].ContentType != "text/html;_charset=utf-8" || out[0].Links != 7 || out[0].Duration != 12*time.Millisecond {
		t.Errorf("entry 0 = %+v", out[0])
	}
	if out[1].Note != "http://b.sim.test/" || out[1].Node != "" || out[1].Status != 301 {
		t.Errorf("entry 1 = %+v", out[1])
	}
}

func TestParseLogLineRejectsGarbage(t *testing.T) {
	for _, s := range []string{"", "a b c", "notatime n 200 1 1 1 ok u t n", "2026-11-22T03:04:07.000Z n x 1 1 1 ok u t n"} {
		if _, err := ParseLogLine(s); err == nil {
			t.Errorf("ParseLogLine(%q) succeeded", s)
		}
	}
}

// The EPOCH field: written by a log with an epoch source (cluster members),
// absent otherwise; lines of either form parse, the old ones with Epoch 0.
func TestCrawlLogEpoch(t *testing.T) {
	var buf strings.Builder
	l := NewCrawlLog(&buf)
	at := time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	l.Write(LogEntry{Time: at, Node: "n1", URL: "http://a.sim.test/", Status: 200, Outcome: "ok"})
	epoch := uint64(3)
	l.SetEpochSource(func() uint64 { return epoch })
	l.Write(LogEntry{Time: at, Node: "n1", URL: "http://a.sim.test/b", Status: 200, Outcome: "ok"})
	epoch = 4
	l.Write(LogEntry{Time: at, Node: "n1", URL: "http://a.sim.test/c", Status: 200, Outcome: "ok"})
	l.Write(LogEntry{Time: at, Node: "n1", URL: "http://a.sim.test/d", Status: 200, Outcome: "ok", Epoch: 9})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []uint64{0, 3, 4, 9}
	if len(lines) != len(want) {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	for i, line := range lines {
		e, err := ParseLogLine(line)
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if e.Epoch != want[i] {
			t.Errorf("line %d %q: epoch %d, want %d", i, line, e.Epoch, want[i])
		}
		if fields := len(strings.Fields(line)); (want[i] == 0) != (fields == 10) {
			t.Errorf("line %d has %d fields: %q", i, fields, line)
		}
	}
	for _, s := range []string{lines[0] + " x", lines[0] + " 0", lines[0] + " -1", lines[1] + " 5"} {
		if _, err := ParseLogLine(s); err == nil {
			t.Errorf("ParseLogLine(%q) succeeded", s)
		}
	}
}

// Defect 2 (issue #23): a node killed mid-write leaves a torn last line;
// reopened, it must cut that tail before appending, or its next line is
// glued to the fragment and the log holds a malformed line for good.
func TestCrawlLogResumeCutsTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log")
	at := time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	l, err := OpenCrawlLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := l.Write(LogEntry{Time: at, Node: "n1", URL: fmt.Sprintf("http://a.sim.test/%d", i), Status: 200, Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	// Cut 40 bytes off, as the reproduction does.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()-40); err != nil {
		t.Fatal(err)
	}
	if l, err = OpenCrawlLog(path, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(LogEntry{Time: at, Node: "n1", URL: "http://a.sim.test/new", Status: 200, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	es, st, err := ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, e := range es {
		urls = append(urls, e.URL)
	}
	want := []string{"http://a.sim.test/0", "http://a.sim.test/1", "http://a.sim.test/new"}
	if fmt.Sprint(urls) != fmt.Sprint(want) || st.Malformed != 0 || st.TornTail {
		t.Errorf("after resume: %q, %+v; want %q and no malformed line", urls, st, want)
	}
	// A log that is one torn line is emptied; a whole log is left alone.
	for _, c := range []struct{ in, want string }{
		{"2026-11-22T03:04:05.000Z n1 2", ""},
		{"", ""},
		{"x\n", "x\n"},
		{"x\ny", "x\n"},
	} {
		if err := os.WriteFile(path, []byte(c.in), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenCrawlLog(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		if b, _ := os.ReadFile(path); string(b) != c.want {
			t.Errorf("resume of %q left %q, want %q", c.in, b, c.want)
		}
		// `crawler node` opens its log behind a HostTally.
		if err := os.WriteFile(path, []byte(c.in), 0o644); err != nil {
			t.Fatal(err)
		}
		tl, err := OpenTalliedLog(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		tl.Close()
		if b, _ := os.ReadFile(path); string(b) != c.want {
			t.Errorf("OpenTalliedLog of %q left %q, want %q", c.in, b, c.want)
		}
	}
}

// Defect 2: a malformed line anywhere (an old torn line that was appended
// after, a line longer than any Write makes) is skipped and counted; the
// lines after it are read.
func TestReadLogSkipsMalformedLines(t *testing.T) {
	var buf strings.Builder
	l := NewCrawlLog(&buf)
	at := time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	line := func(u string) {
		l.Write(LogEntry{Time: at, Node: "n1", URL: u, Status: 200, Outcome: "ok"})
	}
	line("http://a.sim.test/0")
	buf.WriteString("2026-11-22T03:04:05.000Z n1 200 5") // torn, then appended to
	line("http://a.sim.test/1")
	buf.WriteString("garbage\n")
	buf.WriteString(strings.Repeat("x", 3<<20) + "\n") // longer than the reader's line bound
	line("http://a.sim.test/2")
	buf.WriteString("2026-11-22T03:04:05.000Z n1 2") // torn tail
	path := filepath.Join(t.TempDir(), "crawl.log")
	if err := os.WriteFile(path, []byte(buf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	es, st, err := ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].URL != "http://a.sim.test/0" || es[1].URL != "http://a.sim.test/2" {
		t.Errorf("entries %+v", es)
	}
	if want := (LogReadStats{Entries: 2, Malformed: 3, TornTail: true}); st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	// ReadLogFile, the callers' shorthand, reads the same entries.
	if es2, err := ReadLogFile(path); err != nil || len(es2) != 2 {
		t.Errorf("ReadLogFile: %d entries, %v", len(es2), err)
	}
}

// Issue #23, defect 8: a 200 KB Location header wrote a 200 KB line, and
// control bytes other than \t\r\n went into the line raw. Each text field
// is now escaped and capped.
func TestCrawlLogCapsFields(t *testing.T) {
	var buf strings.Builder
	l := NewCrawlLog(&buf)
	huge := "http://a.sim.test/" + strings.Repeat("x", 200<<10)
	at := time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	if err := l.Write(LogEntry{Time: at, Node: "n\x001", URL: huge, Status: 301, Outcome: "redirect",
		ContentType: "text/html;\r\n\tcharset=utf-8\x1b\x7f " + strings.Repeat("p", 1000), Note: huge}); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	maxURL := defaultLogURLLength()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("not one line: %.300q", line)
	}
	if len(line) > 2*maxURL+LogNoteSlack+LogContentTypeLength+2*LogShortLength+200 {
		t.Errorf("line of %d bytes", len(line))
	}
	for _, c := range line[:len(line)-1] {
		if c < 0x20 || c == 0x7f {
			t.Fatalf("control byte %#x in %.300q", c, line)
		}
	}
	e, err := ParseLogLine(line)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.URL) != maxURL || !strings.HasSuffix(e.URL, LogEllipsis) || !strings.HasPrefix(e.URL, "http://a.sim.test/xxx") {
		t.Errorf("URL field of %d bytes: %.40q…%q", len(e.URL), e.URL, e.URL[max(0, len(e.URL)-10):])
	}
	if len(e.Note) != maxURL+LogNoteSlack || !strings.HasSuffix(e.Note, LogEllipsis) {
		t.Errorf("NOTE field of %d bytes", len(e.Note))
	}
	if want := "text/html;%0D%0A%09charset=utf-8%1B%7F_ppp"; !strings.HasPrefix(e.ContentType, want) ||
		len(e.ContentType) > LogContentTypeLength || !strings.HasSuffix(e.ContentType, LogEllipsis) {
		t.Errorf("CONTENT-TYPE %q, want %q… of at most %d bytes", e.ContentType, want, LogContentTypeLength)
	}
	if e.Node != "n%001" {
		t.Errorf("NODE %q", e.Node)
	}
}

// The URL field's bound is the crawl's URL limit: a URL the filter admits
// is logged whole, a longer one (a seed, a robots.txt URL) is cut; a node
// takes the bound from NewSeedFilter's options.
func TestCrawlLogURLBound(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	urlOf := func(n int) string { return "http://a.sim.test/" + strings.Repeat("y", n-len("http://a.sim.test/")) }
	for _, c := range []struct {
		set, n int
		whole  bool
	}{
		{100, 100, true}, {100, 101, false}, {0, 2048, true}, {0, 2049, false},
		{-1, MaxLogURLLength, true}, {-1, MaxLogURLLength + 1, false}, {1 << 20, MaxLogURLLength + 1, false},
	} {
		var buf strings.Builder
		l := NewCrawlLog(&buf)
		l.SetMaxURLLength(c.set)
		u := urlOf(c.n)
		l.Write(LogEntry{Time: at, URL: u, Status: 200, Outcome: "ok"})
		e, err := ParseLogLine(buf.String())
		if err != nil {
			t.Fatal(err)
		}
		if whole := e.URL == u; whole != c.whole || (!whole && !strings.HasSuffix(e.URL, LogEllipsis)) {
			t.Errorf("SetMaxURLLength(%d), URL of %d bytes: logged %d bytes, whole %v", c.set, c.n, len(e.URL), whole)
		}
	}
	lf, err := NewSeedFilter(extract.FilterOptions{MaxURLLength: 100}, []string{"http://a.sim.test/"})
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	l := NewCrawlLog(&buf)
	l.fitFilter(lf)
	l.Write(LogEntry{Time: at, URL: urlOf(101), Status: 200, Outcome: "ok"})
	if e, err := ParseLogLine(buf.String()); err != nil || len(e.URL) != 100 {
		t.Errorf("log behind a filter of 100-byte URLs: %d bytes, %v", len(e.URL), err)
	}
}

// escapeRef is the log's escaping, written out plainly (no cap): '_' for a
// space, %XX for other control bytes.
func escapeRef(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			b.WriteByte('_')
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// FuzzCrawlLogRoundTrip: Write then ParseLogLine gives back the entry with
// its numbers as written (times and durations in whole milliseconds) and
// each text field escaped and, if longer than its bound, cut to a prefix
// ending with LogEllipsis; the line is one line of at most maxLogLine bytes
// without control bytes.
func FuzzCrawlLogRoundTrip(f *testing.F) {
	f.Add("http://a.sim.test/x", "n1", "ok", "text/html; charset=utf-8", "", 200, int64(1234), int64(12e6), 7, uint64(0), int64(1763780645006), 0, "", "")
	f.Add("http://a.sim.test/r", "", "redirect", "", "http://b.sim.test/\r\n\x00", 301, int64(0), int64(-1), 0, uint64(3), int64(0), 40, "", "")
	f.Add(strings.Repeat("é", 40), "-", "a b", "\t", "…", -5, int64(-1), int64(1), -1, uint64(1<<63), int64(253402300799999), -1, "", "")
	f.Add("http://a.sim.test/x", "n1", "ok", "text/html", "", 200, int64(1), int64(1), 1, uint64(0), int64(1), 0, "noindex,nofollow", "http://a.sim.test/c")
	f.Add("http://a.sim.test/x", "n1", "ok", "text/html", "", 200, int64(1), int64(1), 1, uint64(7), int64(1), 0, "-", "robots=x y=z 5")
	f.Add("x", "n1", "ok", "text/html", "", 200, int64(1), int64(1), 1, uint64(0), int64(1), 0, "", "http://a.sim.test/"+strings.Repeat("c", 3000))
	f.Fuzz(func(t *testing.T, url, node, outcome, ctype, note string, status int, bytes, dur int64, links int, epoch uint64, ms int64, maxURL int, robots, canonical string) {
		ms %= 253402300800000 // years 1970–9999: the time field has four digits
		if ms < 0 {
			ms = -ms
		}
		in := LogEntry{Time: time.UnixMilli(ms).Add(time.Duration(ms%1e6) * time.Nanosecond), Node: node, URL: url,
			Status: status, Outcome: outcome, Bytes: bytes, ContentType: ctype, Duration: time.Duration(dur),
			Links: links, Note: note, Epoch: epoch, Robots: robots, Canonical: canonical}
		var buf strings.Builder
		l := NewCrawlLog(&buf)
		l.SetMaxURLLength(maxURL % (2 * MaxLogURLLength))
		if err := l.Write(in); err != nil {
			t.Fatal(err)
		}
		line := buf.String()
		if len(line) > maxLogLine || strings.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("line of %d bytes, newline at %d", len(line), strings.IndexByte(line, '\n'))
		}
		for i := 0; i < len(line)-1; i++ {
			if c := line[i]; c < 0x20 || c == 0x7f {
				t.Fatalf("control byte %#x at %d in %q", c, i, line)
			}
		}
		got, err := ParseLogLine(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		want := in
		want.Time = time.UnixMilli(ms).UTC()
		want.Duration = time.Duration(dur).Truncate(time.Millisecond)
		want.Node, want.URL, want.Outcome, want.ContentType, want.Note = got.Node, got.URL, got.Outcome, got.ContentType, got.Note
		want.Robots, want.Canonical = got.Robots, got.Canonical
		if got != want {
			t.Fatalf("%q:\n got %+v\nwant %+v", line, got, want)
		}
		for _, c := range []struct {
			name, in, out string
			limit         int
		}{
			{"NODE", node, got.Node, LogShortLength}, {"OUTCOME", outcome, got.Outcome, LogShortLength},
			{"URL", url, got.URL, l.maxURL}, {"CONTENT-TYPE", ctype, got.ContentType, LogContentTypeLength},
			{"NOTE", note, got.Note, l.maxURL + LogNoteSlack},
			{"robots=", robots, got.Robots, LogShortLength}, {"canonical=", canonical, got.Canonical, l.maxURL},
		} {
			esc := escapeRef(c.in)
			if esc == "-" && !strings.HasSuffix(c.name, "=") {
				esc = "" // "-" is how the log writes an empty field
			}
			switch {
			case len(c.out) > c.limit:
				t.Errorf("%s of %d bytes, bound %d", c.name, len(c.out), c.limit)
			case len(esc) <= c.limit && c.out != esc:
				t.Errorf("%s %q, want %q", c.name, c.out, esc)
			case len(esc) > c.limit && (!strings.HasSuffix(c.out, LogEllipsis) || !strings.HasPrefix(esc, strings.TrimSuffix(c.out, LogEllipsis))):
				t.Errorf("%s %q is not a cut of %q", c.name, c.out, esc)
			}
		}
	})
}

// A torn last line (kill -9 or a full disk mid-write) is cut off when the
// log is opened again: appended to, it became a malformed line in the
// middle, and ReadLogFile failed on the union of the runs' lines.
func TestCrawlLogReopenCutsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log")
	var cuts []string
	logger := logging.Lines(func(l string) { cuts = append(cuts, l) }, slog.LevelWarn)
	e := LogEntry{Time: time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC), URL: "http://a.sim.test/", Status: 200, Outcome: OutcomeOK}
	for i, torn := range []string{"2026-11-22T03:04:07.000Z n1 200 5", strings.Repeat("x", 100<<10), ""} {
		l, err := OpenCrawlLog(path, logger)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Write(e); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(torn)
		f.Close()
		out, err := ReadLogFile(path)
		if err != nil || len(out) != i+1 {
			t.Fatalf("run %d: %d entries, %v; want %d, nil", i, len(out), err, i+1)
		}
	}
	l, err := OpenCrawlLog(path, logger)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	b, _ := os.ReadFile(path)
	if strings.Count(string(b), "\n") != 3 || !strings.HasSuffix(string(b), "\n") {
		t.Errorf("log after 3 runs and a reopen:\n%s", b)
	}
	if len(cuts) != 2 || !strings.Contains(cuts[0], "torn last line") {
		t.Errorf("want a warning for each of the 2 torn lines cut, got %q", cuts)
	}
}

// The keyed fields robots= and canonical=: written only when set (a line
// without them is what earlier versions wrote), after EPOCH, in a fixed
// order; lines of every earlier form still parse.
func TestCrawlLogRobotsFields(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	base := LogEntry{Time: at, Node: "n1", URL: "http://a.sim.test/p", Status: 200, Outcome: "ok", ContentType: "text/html"}
	const old = "2026-11-22T03:04:05.000Z n1 200 0 0 0 ok http://a.sim.test/p text/html -"
	for _, tc := range []struct {
		robots, canonical string
		epoch             uint64
		line              string
	}{
		{"", "", 0, old},
		{"", "", 4, old + " 4"},
		{"noindex", "", 0, old + " robots=noindex"},
		{"", "http://a.sim.test/c", 0, old + " canonical=http://a.sim.test/c"},
		{"noindex,nofollow", "http://a.sim.test/c?x=1 2", 9, old + " 9 robots=noindex,nofollow canonical=http://a.sim.test/c?x=1_2"},
	} {
		var buf strings.Builder
		l := NewCrawlLog(&buf)
		e := base
		e.Robots, e.Canonical, e.Epoch = tc.robots, tc.canonical, tc.epoch
		if err := l.Write(e); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(buf.String(), "\n"); got != tc.line {
			t.Errorf("wrote %q, want %q", got, tc.line)
		}
		got, err := ParseLogLine(tc.line)
		want := e
		want.Canonical = strings.ReplaceAll(want.Canonical, " ", "_")
		if err != nil || got != want {
			t.Errorf("ParseLogLine(%q) = %+v, %v; want %+v", tc.line, got, err, want)
		}
	}
	for _, s := range []string{
		old + " robots=", old + " canonical=", old + " robots=nofollow robots=noindex",
		old + " canonical=http://a/ robots=noindex", old + " robots=noindex 4", old + " other=x",
		old + " robots=noindex canonical=http://a/ x", old + " 4 5",
	} {
		if _, err := ParseLogLine(s); err == nil {
			t.Errorf("ParseLogLine(%q) succeeded", s)
		}
	}
}
