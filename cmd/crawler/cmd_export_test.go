package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// A limited crawl of the embedded simweb leaves URLs queued; export's
// kinds then equal what its crawl.log and its frontier hold, and `log
// --json` writes one object per crawl.log entry with the provenance fields.
func TestExportAndLogJSON(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "crawl", "--simweb", "small", "--data", dir, "--workers", "8", "--max-fetches", "60", "--progress", "0"); code != 0 {
		t.Fatalf("crawl: exit %d: %s", code, stderr)
	}
	es, err := crawl.ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	var fetched []string
	withVia := 0
	for _, e := range es {
		if e.Outcome != crawl.OutcomeRobots {
			fetched = append(fetched, e.URL)
		}
		if e.Via != "" && e.Hops != "" && e.Proto != "" {
			withVia++
		}
	}
	sort.Strings(fetched)
	fetched = slices.Compact(fetched)
	if len(fetched) != 60 || withVia == 0 {
		t.Fatalf("crawl.log: %d URLs fetched, %d lines with via, hops and proto", len(fetched), withVia)
	}

	lines := func(args ...string) []string {
		t.Helper()
		code, out, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	got := lines("export", "--data", dir, "--what", "fetched")
	sort.Strings(got)
	if !slices.Equal(got, fetched) {
		t.Errorf("export fetched: %d URLs, crawl.log %d", len(got), len(fetched))
	}
	out := filepath.Join(t.TempDir(), "queued.jsonl")
	lines("export", "--data", dir, "--what", "queued", "--format", "jsonl", "--out", out)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var queued []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var u crawl.ExportedURL
		if err := json.Unmarshal(sc.Bytes(), &u); err != nil {
			t.Fatal(err)
		}
		if u.Depth == nil || strings.Contains(u.URL, "#") || (*u.Depth > 0 && (u.Via == "" || crawl.HopCount(u.Hops) < 1)) {
			t.Errorf("queued %+v: want a bare URL with its depth, and a via and hops when not a seed", u)
		}
		queued = append(queued, u.URL)
	}
	if len(queued) == 0 {
		t.Fatal("nothing queued after a limited crawl")
	}
	seen := lines("export", "--data", dir, "--what", "seen")
	for _, u := range slices.Concat(fetched, queued) {
		if !slices.Contains(seen, u) {
			t.Errorf("seen lacks %s", u)
			break
		}
	}
	js := lines("log", "--json", "--data", dir)
	if len(js) != len(es) {
		t.Fatalf("log --json: %d lines, crawl.log %d entries", len(js), len(es))
	}
	for i, l := range js {
		var j crawl.LogJSON
		if err := json.Unmarshal([]byte(l), &j); err != nil || j.URL != es[i].URL || j.Via != es[i].Via || j.Hops != es[i].Hops || j.Proto != es[i].Proto {
			t.Fatalf("log --json line %d %q: %v; entry %+v", i, l, err, es[i])
		}
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"log", "--data", dir}, 2},
		{[]string{"log", "--json", "a", "b"}, 2},
		{[]string{"export", "--data", dir}, 2},
		{[]string{"export", "--data", dir, "--what", "all"}, 2},
		{[]string{"export", "--data", dir, "--what", "seen", "--format", "csv"}, 2},
		{[]string{"export", "--data", t.TempDir(), "--what", "seen"}, 1},
	} {
		if code, _, _ := runCLI(t, c.args...); code != c.code {
			t.Errorf("%v: exit %d, want %d", c.args, code, c.code)
		}
	}
}
