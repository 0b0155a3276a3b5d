package promtext

import "testing"

func TestSum(t *testing.T) {
	page := `# HELP sextant_fetches_total x
sextant_fetches_total{node="a",outcome="ok"} 3
sextant_fetches_total{node="a",outcome="error"} 2.5
sextant_fetches_total_extra 100
sextant_fetches 7
other 1
`
	if got := Sum(page, "sextant_fetches_total"); got != 5.5 {
		t.Errorf("Sum = %v, want 5.5", got)
	}
	if got := Sum(page, "sextant_fetches"); got != 7 {
		t.Errorf("Sum of an unlabelled sample = %v, want 7", got)
	}
	if got := Sum(page, "missing"); got != 0 {
		t.Errorf("Sum of a missing metric = %v", got)
	}
}
