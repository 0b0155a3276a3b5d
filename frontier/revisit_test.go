package frontier

import "testing"

// TestRevisitBypassesBudget: a URL queued again for a revisit (Item.Revisit)
// is neither dropped by a spent hard budget nor counted against it.
func TestRevisitBypassesBudget(t *testing.T) {
	f := open(t, t.TempDir(), Options{HostBudget: Budget{Hard: 2}})
	defer f.Close()
	if err := f.AddBatch("due", 1, items("h", 2)); err != nil {
		t.Fatal(err)
	}
	again := items("h", 2)
	for i := range again {
		again[i].Revisit = true
	}
	if err := f.AddBatch("revisit", 1, again); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Admitted("h"); n != 2 {
		t.Fatalf("admitted %d, want 2: revisits are not counted", n)
	}
	if st := f.Stats(); st.Added != 4 || st.BudgetDropped != 0 {
		t.Fatalf("added %d dropped %d; want 4 and 0", st.Added, st.BudgetDropped)
	}
	if err := f.AddBatch("due", 2, items("h", 3)[2:]); err != nil {
		t.Fatal(err)
	}
	if st := f.Stats(); st.BudgetDropped != 1 {
		t.Fatalf("a new URL over the budget: dropped %d, want 1", st.BudgetDropped)
	}
}
