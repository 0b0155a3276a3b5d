package frontier

import (
	"fmt"
	"testing"
)

// TestScanAndApplied: Scan returns every stored URL, leased ones included,
// and Applied the last AddBatch seq of a source, also after a reopen.
func TestScanAndApplied(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var items []Item
	for i := 0; i < 50; i++ {
		items = append(items, Item{URL: fmt.Sprintf("http://h%d.test/%d", i%7, i), Host: fmt.Sprintf("h%d.test", i%7), Depth: uint16(i % 3)})
	}
	if err := f.AddBatch("due", 3, items[:30]); err != nil {
		t.Fatal(err)
	}
	if err := f.AddBatch("due", 4, items[30:]); err != nil {
		t.Fatal(err)
	}
	l, ok, err := f.TryNext()
	if err != nil || !ok {
		t.Fatalf("TryNext: %v %v", ok, err)
	}
	check := func(f *Frontier, want int) {
		t.Helper()
		got := map[string]uint16{}
		n, err := f.Scan(func(it Item) error { got[it.URL] = it.Depth; return nil })
		if err != nil || n != int64(want) || len(got) != want {
			t.Fatalf("Scan = %d (%d distinct), %v; want %d", n, len(got), err, want)
		}
		for _, it := range items {
			if d, ok := got[it.URL]; !ok && want == len(items) || ok && d != it.Depth {
				t.Fatalf("Scan: %s depth %d, present %v", it.URL, d, ok)
			}
		}
		if s, err := f.Applied("due"); err != nil || s != 4 {
			t.Fatalf("Applied = %d, %v; want 4", s, err)
		}
		if s, err := f.Applied("other"); err != nil || s != 0 {
			t.Fatalf("Applied(other) = %d, %v; want 0", s, err)
		}
	}
	check(f, 50) // the lease is still stored
	if err := f.Done(l, Result{}); err != nil {
		t.Fatal(err)
	}
	check(f, 49)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if f, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	check(f, 49)
}
