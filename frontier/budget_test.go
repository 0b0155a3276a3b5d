package frontier

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestHostBudgetPersists: the first Soft URLs of a site keep their
// priority, the next up to Hard are lowered, the rest dropped; the counts
// survive a reopen; a re-delivered batch changes nothing; Site overrides
// Host as the budget key.
func TestHostBudgetPersists(t *testing.T) {
	dir := t.TempDir()
	o := Options{HostBudget: Budget{Soft: 3, Hard: 5, LowPriority: 2}}
	f := open(t, dir, o)
	if err := f.AddBatch("due", 1, append(items("trap", 4), items("ok", 2)...)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = open(t, dir, o)
	defer f.Close()
	for _, c := range []struct {
		site string
		want int
	}{{"trap", 4}, {"ok", 2}, {"none", 0}} {
		if n, err := f.Admitted(c.site); err != nil || n != c.want {
			t.Fatalf("Admitted(%s) = %d, %v after reopen; want %d", c.site, n, err, c.want)
		}
	}
	// Re-delivery of batch 1 is ignored, counts included.
	if err := f.AddBatch("due", 1, items("trap", 4)); err != nil {
		t.Fatal(err)
	}
	more := items("trap", 10)[4:]
	if err := f.AddBatch("due", 2, more); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Admitted("trap"); n != 5 {
		t.Fatalf("trap admitted %d, want the hard budget 5", n)
	}
	// Site: two politeness keys (IPs) of one site share its budget.
	if err := f.AddBatch("due", 3, []Item{
		{URL: "http://s/1", Host: "10.0.0.1", Site: "s"}, {URL: "http://s/2", Host: "10.0.0.2", Site: "s"},
		{URL: "http://s/3", Host: "10.0.0.1", Site: "s"}, {URL: "http://s/4", Host: "10.0.0.2", Site: "s"},
		{URL: "http://s/5", Host: "10.0.0.2", Site: "s"}, {URL: "http://s/6", Host: "10.0.0.2", Site: "s"},
	}); err != nil {
		t.Fatal(err)
	}
	var normal, low []string
	for {
		l, ok, err := f.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if l.Priority == 0 {
			normal = append(normal, l.URL)
		} else if l.Priority == 2 {
			low = append(low, l.URL)
		} else {
			t.Fatalf("%s has priority %d", l.URL, l.Priority)
		}
		if err := f.Done(l, Result{}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(normal)
	slices.Sort(low)
	got := strings.Join(normal, " ") + " | " + strings.Join(low, " ")
	want := "http://ok/0 http://ok/1 http://s/1 http://s/2 http://s/3 http://trap/0 http://trap/1 http://trap/2 | http://s/4 http://s/5 http://trap/3 http://trap/4"
	if got != want {
		t.Fatalf("leased\n %s\nwant\n %s", got, want)
	}
	if st := f.Stats(); st.BudgetDropped != 5+1 || st.BudgetLowered != 1+2 {
		t.Fatalf("stats: %d dropped, %d lowered; want 6, 3 (since reopen)", st.BudgetDropped, st.BudgetLowered)
	}
}

// TestHostBudgetCacheEviction: counts evicted from the bounded cache are
// read back from pebble.
func TestHostBudgetCacheEviction(t *testing.T) {
	f := open(t, t.TempDir(), Options{HostBudget: Budget{Hard: 2}})
	defer f.Close()
	seq := uint64(0)
	add := func(host string, n int) {
		seq++
		if err := f.AddBatch("due", seq, items(host, n)); err != nil {
			t.Fatal(err)
		}
	}
	add("first", 1)
	f.mu.Lock()
	for i := range admittedCacheSize {
		f.mu.admitted[fmt.Sprint("filler", i)] = 1
	}
	f.mu.Unlock()
	add("other", 1) // evicts an arbitrary entry
	f.mu.Lock()
	delete(f.mu.admitted, "first")
	if len(f.mu.admitted) > admittedCacheSize {
		t.Errorf("cache holds %d > %d", len(f.mu.admitted), admittedCacheSize)
	}
	f.mu.Unlock()
	add("first", 5)
	if n, _ := f.Admitted("first"); n != 2 {
		t.Fatalf("first admitted %d, want 2", n)
	}
}

func TestHostBudgetValidate(t *testing.T) {
	for _, b := range []Budget{{Soft: -1}, {Soft: 5, Hard: 3}} {
		o := Options{HostBudget: b}
		o.EnsureDefaults()
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v", b, err)
		}
	}
}
