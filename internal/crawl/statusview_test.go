package crawl

import (
	"bytes"
	"testing"
	"time"
)

// TestHostTally: fetches per host are counted from the lines the crawl log
// writes through the tally (robots-disallowed lines are not fetches), the
// bytes reach the file unchanged, and Busiest orders hosts by fetches.
func TestHostTally(t *testing.T) {
	var file bytes.Buffer
	tally := NewHostTally(&file, 2)
	log := NewCrawlLog(tally)
	now := time.Now()
	for _, e := range []LogEntry{
		{URL: "http://a.test/1", Status: 200, Outcome: OutcomeOK, Bytes: 100, Duration: 10 * time.Millisecond},
		{URL: "http://b.test/1", Status: 200, Outcome: OutcomeOK, Bytes: 5},
		{URL: "http://a.test:8080/2", Status: 404, Outcome: OutcomeHTTPErr, Bytes: 50, Duration: 30 * time.Millisecond},
		{URL: "http://a.test/3", Outcome: OutcomeRobots},
		{URL: "http://c.test/1", Status: 200, Outcome: OutcomeOK}, // a third host: over maxHosts
	} {
		e.Time, e.Node = now, "n"
		if err := log.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if n := bytes.Count(file.Bytes(), []byte("\n")); n != 5 {
		t.Errorf("file has %d lines, want 5", n)
	}
	got := tally.Busiest(10)
	if len(got) != 2 || got[0].Host != "a.test" || got[0].Fetches != 2 || got[0].Bytes != 150 ||
		got[0].Time != 40*time.Millisecond || got[1].Host != "b.test" || got[1].Fetches != 1 {
		t.Errorf("Busiest = %+v", got)
	}
	if tally.Count("a.test") != 2 || tally.Count("c.test") != 0 {
		t.Errorf("Count a %d c %d", tally.Count("a.test"), tally.Count("c.test"))
	}
	if b := tally.Busiest(1); len(b) != 1 || b[0].Host != "a.test" {
		t.Errorf("Busiest(1) = %+v", b)
	}
}
