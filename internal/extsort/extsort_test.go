package extsort

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Lines added in any order come back sorted, each distinct line once with
// its number of occurrences, across many spilled runs.
func TestSorterMergesRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	want := map[string]int{}
	s, err := NewSorter(t.TempDir(), 7, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 500 {
		l := fmt.Sprintf("http://h%03d/%d", r.IntN(50), r.IntN(4))
		want[l]++
		if err := s.Add(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add(""); err != nil { // an empty line is a line
		t.Fatal(err)
	}
	want[""]++
	m, err := s.Sorted()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var got []string
	for m.Next() {
		if m.Count() != want[m.Line()] {
			t.Errorf("%q: count %d, want %d", m.Line(), m.Count(), want[m.Line()])
		}
		got = append(got, m.Line())
	}
	if m.Err() != nil {
		t.Fatal(m.Err())
	}
	if len(got) != len(want) || !slices.IsSorted(got) {
		t.Errorf("%d distinct lines (sorted: %v), want %d", len(got), slices.IsSorted(got), len(want))
	}
	if s.Len() != 501 {
		t.Errorf("Len %d", s.Len())
	}
}

func TestDedupAndErrors(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSorter(dir, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"b", "a", "b", "b"} {
		s.Add(l)
	}
	if err := s.Add("x\ny"); !errors.Is(err, ErrLine) {
		t.Errorf("a newline: %v", err)
	}
	m, err := s.Sorted()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m.Next() {
		n++
		if m.Count() != 1 {
			t.Errorf("%q counted %d in one deduplicated run", m.Line(), m.Count())
		}
	}
	m.Close()
	if n != 2 {
		t.Errorf("%d distinct lines, want 2", n)
	}
	s.Close()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("Close left %d entries", len(left))
	}
	if _, err := Merge(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("Merge of a missing file: no error")
	}
	empty, err := Merge()
	if err != nil || empty.Next() {
		t.Errorf("empty merge: %v", err)
	}
}
