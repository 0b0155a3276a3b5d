package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed document is exactly what the template makes of the committed
// data: a number edited by hand in either, or data regenerated without
// rendering, fails here.
func TestDocMatchesData(t *testing.T) {
	got, err := render("../../docs/caching-study", "caching-study.md.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../docs/caching-study.md")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("docs/caching-study.md line %d disagrees with its data:\n doc:  %q\n data: %q\nrun `go run ./study/studydoc` after changing the data or the template", i+1, wl, gl)
		}
	}
}

func TestFuncs(t *testing.T) {
	dir := t.TempDir()
	csv := "algorithm,k,requests,misses,miss_rate,miss_rate_rel_min\n" +
		"clock,1,100,90,0.9,\nclock,2,100,50,0.5,\nclock,4,100,10,0.1,\n" +
		"lru,1,100,80,0.8,\nlru,2,100,55,0.55,\nlru,4,100,10,0.1,\n" +
		"infinite,1,100,10,0.1,\ninfinite,2,100,10,0.1,\ninfinite,4,100,10,0.1,\n"
	if err := os.WriteFile(filepath.Join(dir, "r.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newData(dir)
	if g, err := d.maxGap("r.csv", "clock", "lru"); err != nil || g.K != 1 || g.Pts < 9.99 || g.Pts > 10.01 {
		t.Errorf("maxGap = %+v, %v; want +10 points at k=1", g, err)
	}
	if k, _ := d.firstK("r.csv", "lru", 0.55); k != 2 {
		t.Errorf("firstK = %d, want 2", k)
	}
	if s, _ := d.ratioRange("r.csv", "clock", "lru", 2, 4); s.Lo > 0.91 || s.Lo < 0.90 || s.Hi != 1 {
		t.Errorf("ratioRange = %+v", s)
	}
	if n, _ := d.distinct("r.csv"); n != 10 {
		t.Errorf("distinct = %d", n)
	}
	if got, _ := d.curveTable("r.csv", "1,floor", "C=clock"); got != "| C | 90.0% | 10.0% |" {
		t.Errorf("curveTable = %q", got)
	}
	if _, err := d.at("r.csv", "min", 1); err == nil {
		t.Error("a missing point rendered")
	}
	if groupDigits(1054474) != "1 054 474" || groupDigits(float64(999)) != "999" || kexp(32768) != "2^15" || kexp(24) != "24" {
		t.Error("number formats")
	}
}

func TestJSONAt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "r.json"), []byte(`{"a": 1, "dispatch": {"steals": 7, "mode": "x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newData(dir)
	if v, err := d.jsonAt("r.json", "dispatch.steals"); err != nil || v != 7 {
		t.Errorf("dispatch.steals = %v, %v", v, err)
	}
	for _, p := range []string{"dispatch.mode", "dispatch.none", "a.b"} {
		if _, err := d.jsonAt("r.json", p); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}
