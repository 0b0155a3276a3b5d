package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestHelpers(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"r.csv": "algorithm,k,requests,misses,miss_rate,miss_rate_rel_min\n" +
			"clock,1,100,90,0.9,\nclock,2,100,60,0.6,\nrandom,1,100,80,0.8,\nrandom,2,100,70,0.7,\n",
		"pw.csv": "algorithm,workers,assignment,k_total,k_per_worker,requests,misses,miss_rate\n" +
			"clock,8,worker-mod-W,8,1,100,90,0.9\nclock,8,worker-mod-W,16,2,100,40,0.4\nclock,1,global,8,8,100,10,0.1\n",
		"a.json":    `{"pages_per_second": 10}`,
		"b.json":    `{"pages_per_second": 30}`,
		"steps.csv": "step,finished,load\nlive,2026-01-01T00:00Z,1\nbench,2026-01-02T00:00Z,2\nlive,2026-01-03T00:00Z,3\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := newData(dir)
	if a, _ := d.lowestOver("r.csv", 1, "clock", "random"); a != "random" {
		t.Errorf("lowestOver k ≤ 1 = %q, want random", a)
	}
	if a, _ := d.lowestOver("r.csv", 2, "clock", "random"); a != "clock" {
		t.Errorf("lowestOver k ≤ 2 = %q, want clock", a)
	}
	if as, _ := d.algos("r.csv"); len(as) != 2 || as[0] != "clock" {
		t.Errorf("algos = %v", as)
	}
	if m, err := d.pwMin("pw.csv", 8, "worker-mod-W"); err != nil || m != 0.4 {
		t.Errorf("pwMin = %v, %v", m, err)
	}
	if _, err := d.pwMin("pw.csv", 32, "crawl-workers"); !errors.Is(err, ErrNoData) {
		t.Errorf("pwMin of a missing row: %v", err)
	}
	if n, _ := d.pwRequests("pw.csv"); n != 100 {
		t.Errorf("pwRequests = %d", n)
	}
	if s, _ := d.jsonRange("pages_per_second", "a.json", "b.json"); s.Lo != 10 || s.Hi != 30 {
		t.Errorf("jsonRange = %+v", s)
	}
	if got := d.stepDone("live"); got != "2026-01-03T00:00Z" {
		t.Errorf("stepDone(live) = %q, want the last line's", got)
	}
	if got := d.stepDone("crawl"); got != "" {
		t.Errorf("stepDone(crawl) = %q", got)
	}
	if got, _ := cols("256,1024,floor", kexp); got != " 2^8 | 2^10 | floor |" {
		t.Errorf("cols = %q", got)
	}
	if _, err := must(false, "x"); !errors.Is(err, ErrNoData) {
		t.Error("must(false) did not fail")
	}
}
