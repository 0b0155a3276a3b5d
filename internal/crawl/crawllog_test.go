package crawl

import (
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

// A torn last line (kill -9 or a full disk mid-write) is cut off when the
// log is opened again: appended to, it became a malformed line in the
// middle, and ReadLogFile failed on the union of the runs' lines.
func TestCrawlLogReopenCutsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log")
	e := LogEntry{Time: time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC), URL: "http://a.sim.test/", Status: 200, Outcome: OutcomeOK}
	for i, torn := range []string{"2026-11-22T03:04:07.000Z n1 200 5", strings.Repeat("x", 100<<10), ""} {
		l, err := OpenCrawlLog(path)
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
	l, err := OpenCrawlLog(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	b, _ := os.ReadFile(path)
	if strings.Count(string(b), "\n") != 3 || !strings.HasSuffix(string(b), "\n") {
		t.Errorf("log after 3 runs and a reopen:\n%s", b)
	}
}
