package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWorkload: every algorithm's hit run hits on every lookup and its miss
// run never does (workload checks both), so the counts are of the paths
// the rows name; an unknown kind is an error.
func TestWorkload(t *testing.T) {
	for algo := range seenSymbol {
		for _, kind := range []string{"hit", "miss"} {
			if err := workload(algo, kind, 1000, 5000); err != nil {
				t.Errorf("%s %s: %v", algo, kind, err)
			}
		}
	}
	if err := workload("clock", "both", 10, 10); err == nil {
		t.Error("kind both accepted")
	}
}

// TestCount runs one row under callgrind where valgrind is installed: the
// longer run counts more instructions, about as many more per lookup as a
// CLOCK miss executes (tens to a few hundred).
func TestCount(t *testing.T) {
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		t.Skip("valgrind not installed")
	}
	self := buildSelf(t)
	c1, err := count(vg, self, "clock", "miss", 1024, 2000)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := count(vg, self, "clock", "miss", 1024, 4000)
	if err != nil {
		t.Fatal(err)
	}
	if per := float64(int64(c2-c1)) / 2000; per < 20 || per > 1000 {
		t.Errorf("%.1f instructions per miss (counts %d, %d)", per, c1, c2)
	}
}

func buildSelf(t *testing.T) string {
	bin := t.TempDir() + "/cacheinstr"
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	return bin
}
