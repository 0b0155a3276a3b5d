package crawl

import (
	"bufio"
	"encoding/json"
	"io"
	"time"
)

// LogJSON is a crawl log line as `crawler log --json` writes it: one JSON
// object per line, with these field names (stable: tools depend on them;
// see docs/crawl-log.md). Text fields are as the log holds them (escaped
// and capped, see CrawlLog); empty optional fields are left out.
type LogJSON struct {
	Time        string `json:"time"` // RFC 3339, UTC, milliseconds
	Node        string `json:"node,omitempty"`
	Status      int    `json:"status"`
	Bytes       int64  `json:"bytes"`
	DurationMS  int64  `json:"duration_ms"`
	Links       int    `json:"links"`
	Outcome     string `json:"outcome"`
	URL         string `json:"url"`
	ContentType string `json:"content_type,omitempty"`
	Note        string `json:"note,omitempty"`
	Epoch       uint64 `json:"epoch,omitempty"`
	Robots      string `json:"robots,omitempty"`
	Canonical   string `json:"canonical,omitempty"`
	Via         string `json:"via,omitempty"`
	Hops        string `json:"hops,omitempty"`
	HopCount    int    `json:"hop_count"` // len of the path from the seed, dropped hops included
	Digest      string `json:"digest,omitempty"`
	Proto       string `json:"proto,omitempty"`
	WARCFile    string `json:"warc_file,omitempty"`
	WARCOffset  *int64 `json:"warc_offset,omitempty"` // set when warc_file is
}

// ToJSON is e in its JSON form.
func (e LogEntry) ToJSON() LogJSON {
	j := LogJSON{Time: e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), Node: e.Node, Status: e.Status, Bytes: e.Bytes,
		DurationMS: e.Duration.Milliseconds(), Links: e.Links, Outcome: e.Outcome, URL: e.URL,
		ContentType: e.ContentType, Note: e.Note, Epoch: e.Epoch, Robots: e.Robots, Canonical: e.Canonical,
		Via: e.Via, Hops: e.Hops, HopCount: max(HopCount(e.Hops), 0), Digest: e.Digest, Proto: e.Proto, WARCFile: e.WARCFile}
	if e.WARCFile != "" {
		off := e.WARCOffset
		j.WARCOffset = &off
	}
	return j
}

// Entry is the log entry j was made from (ToJSON's inverse).
func (j LogJSON) Entry() (LogEntry, error) {
	t, err := time.Parse("2006-01-02T15:04:05.000Z", j.Time)
	if err != nil {
		return LogEntry{}, err
	}
	e := LogEntry{Time: t, Node: j.Node, Status: j.Status, Bytes: j.Bytes, Duration: time.Duration(j.DurationMS) * time.Millisecond,
		Links: j.Links, Outcome: j.Outcome, URL: j.URL, ContentType: j.ContentType, Note: j.Note, Epoch: j.Epoch,
		Robots: j.Robots, Canonical: j.Canonical, Via: j.Via, Hops: j.Hops, Digest: j.Digest, Proto: j.Proto, WARCFile: j.WARCFile}
	if j.WARCOffset != nil {
		e.WARCOffset = *j.WARCOffset
	}
	return e, nil
}

// WriteLogJSON writes the entries of the crawl log r to w as JSON lines
// (LogJSON), skipping the lines a LogReader skips; it returns what it read.
func WriteLogJSON(w io.Writer, r io.Reader) (LogReadStats, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	lr := NewLogReader(r)
	for e, ok := lr.Next(); ok; e, ok = lr.Next() {
		if err := enc.Encode(e.ToJSON()); err != nil {
			return lr.Stats(), err
		}
	}
	if err := bw.Flush(); err != nil {
		return lr.Stats(), err
	}
	return lr.Stats(), lr.Err()
}
