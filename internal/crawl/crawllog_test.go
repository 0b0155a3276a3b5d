package crawl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCrawlLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log")
	l, err := OpenCrawlLog(path)
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
	l, err := OpenCrawlLog(path)
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
	if l, err = OpenCrawlLog(path); err != nil {
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
		l, err := OpenCrawlLog(path)
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		if b, _ := os.ReadFile(path); string(b) != c.want {
			t.Errorf("resume of %q left %q, want %q", c.in, b, c.want)
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
