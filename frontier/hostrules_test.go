package frontier

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// hostsOf is the hosts of urls ("http://HOST/N"), in order of first sight.
func hostsOf(urls []string) []string {
	var out []string
	for _, u := range urls {
		h := strings.SplitN(strings.TrimPrefix(u, "http://"), "/", 2)[0]
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

// TestHostRulesPark: a paused or blocked host's URLs stay queued and are
// not leased; lifting the rule hands them out.
func TestHostRulesPark(t *testing.T) {
	hosts := []string{"a.example.com", "b.other.org", "c.other.org:8080", "example.com"} // sorted
	for _, tc := range []struct {
		name            string
		rules           HostRules
		fetched         []string // hosts drained while the rules hold
		paused, blocked int64    // Held
	}{
		{"none", HostRules{}, hosts, 0, 0},
		{"pause host", HostRules{Paused: []Match{{Host: "example.com"}}},
			[]string{"a.example.com", "b.other.org", "c.other.org:8080"}, 3, 0},
		{"pause host without port", HostRules{Paused: []Match{{Host: "c.other.org"}}},
			[]string{"a.example.com", "b.other.org", "example.com"}, 3, 0},
		{"block domain", HostRules{Blocked: []Match{{Domain: "example.com"}}},
			[]string{"b.other.org", "c.other.org:8080"}, 0, 6},
		{"block wins over pause", HostRules{Paused: []Match{{Domain: "other.org"}}, Blocked: []Match{{Host: "b.other.org"}}},
			[]string{"a.example.com", "example.com"}, 3, 3},
		{"pause all", HostRules{Paused: []Match{{}}}, nil, 12, 0},
		{"domain is not a suffix of a name", HostRules{Blocked: []Match{{Domain: "ample.com"}}}, hosts, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := open(t, t.TempDir(), Options{Workers: 1})
			defer f.Close()
			// Rules set before and after the URLs arrive must act alike.
			for _, before := range []bool{true, false} {
				if before {
					if err := f.SetRules(tc.rules); err != nil {
						t.Fatal(err)
					}
				}
				for _, h := range hosts {
					if err := f.Add(items(h, 3)...); err != nil {
						t.Fatal(err)
					}
				}
				if !before {
					if err := f.SetRules(tc.rules); err != nil {
						t.Fatal(err)
					}
				}
				got := drain(t, f)
				if !slices.Equal(hostsOf(got), tc.fetched) {
					t.Fatalf("before=%v: fetched hosts %v, want %v", before, hostsOf(got), tc.fetched)
				}
				p, b, err := f.Held()
				if err != nil || p != tc.paused || b != tc.blocked {
					t.Fatalf("before=%v: Held = %d paused, %d blocked, %v; want %d, %d", before, p, b, err, tc.paused, tc.blocked)
				}
				if want := int(tc.paused + tc.blocked); f.Len() != want {
					t.Fatalf("before=%v: Len %d, want %d (held URLs stay queued)", before, f.Len(), want)
				}
				if err := f.SetRules(HostRules{}); err != nil {
					t.Fatal(err)
				}
				rest := drain(t, f)
				if len(rest) != int(tc.paused+tc.blocked) || !f.Idle() {
					t.Fatalf("before=%v: after lifting the rules %d URLs fetched, want %d; idle %v", before, len(rest), tc.paused+tc.blocked, f.Idle())
				}
			}
		})
	}
}

// TestHostRulesInFlight: a pause lets the fetch in flight finish
// (ParkedInFlight counts it) and leases nothing more of the host; Borrow
// is refused while the host is parked.
func TestHostRulesInFlight(t *testing.T) {
	f := open(t, t.TempDir(), Options{Workers: 1})
	defer f.Close()
	if err := f.Add(items("a", 3)...); err != nil {
		t.Fatal(err)
	}
	l, ok, err := f.TryNext()
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := f.SetRules(HostRules{Paused: []Match{{Host: "a"}}}); err != nil {
		t.Fatal(err)
	}
	if n := f.ParkedInFlight(); n != 1 {
		t.Fatalf("ParkedInFlight %d, want 1", n)
	}
	if err := f.Done(l, Result{}); err != nil {
		t.Fatal(err)
	}
	if n := f.ParkedInFlight(); n != 0 {
		t.Fatalf("ParkedInFlight %d after Done, want 0", n)
	}
	if got := drain(t, f); len(got) != 0 {
		t.Fatalf("paused host leased %v", got)
	}
	if _, ok, _, err := f.Borrow("a"); ok || err != nil {
		t.Fatalf("Borrow of a paused host: ok %v, err %v", ok, err)
	}
	if err := f.SetRules(HostRules{}); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, f); len(got) != 2 {
		t.Fatalf("after resume fetched %v, want 2 URLs", got)
	}
}

// TestHostRulesOverride: a Delay override fixes the host's wait, a Factor
// override scales it, other hosts keep the options; MaxPages caps admission.
func TestHostRulesOverride(t *testing.T) {
	for _, tc := range []struct {
		name string
		ov   Override
		host string
		want time.Duration // wait after a 1 s fetch
	}{
		{"delay", Override{Delay: 7 * time.Second}, "a", 7 * time.Second},
		{"factor", Override{Factor: 3}, "a", 3 * time.Second},
		{"factor zero", Override{FactorSet: true}, "a", time.Second}, // MinDelay
		{"other host keeps options", Override{Delay: 7 * time.Second}, "b", 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := NewManualClock(epoch)
			f := open(t, t.TempDir(), Options{Workers: 1, Clock: clk, Factor: 10, MinDelay: time.Second, MaxDelay: time.Minute})
			defer f.Close()
			if err := f.SetRules(HostRules{Overrides: map[string]Override{"a": tc.ov}}); err != nil {
				t.Fatal(err)
			}
			if err := f.Add(items(tc.host, 2)...); err != nil {
				t.Fatal(err)
			}
			l, ok, err := f.TryNext()
			if !ok || err != nil {
				t.Fatal(ok, err)
			}
			if err := f.Done(l, Result{Duration: time.Second}); err != nil {
				t.Fatal(err)
			}
			clk.Advance(tc.want - time.Millisecond)
			if _, ok, _ := f.TryNext(); ok {
				t.Fatalf("leased before %v", tc.want)
			}
			clk.Advance(time.Millisecond)
			if _, ok, _ := f.TryNext(); !ok {
				t.Fatalf("not leased at %v", tc.want)
			}
		})
	}
	t.Run("max pages", func(t *testing.T) {
		f := open(t, t.TempDir(), Options{Workers: 1})
		defer f.Close()
		if err := f.SetRules(HostRules{Overrides: map[string]Override{"a": {MaxPages: 2}}}); err != nil {
			t.Fatal(err)
		}
		if err := f.Add(slices.Concat(items("a", 5), items("b", 5))...); err != nil {
			t.Fatal(err)
		}
		if got := hostsOf(drain(t, f)); f.Stats().BudgetDropped != 3 || f.Stats().Completed != 7 {
			t.Fatalf("fetched %v, %d dropped, %d completed; want 3 dropped, 7 fetched", got, f.Stats().BudgetDropped, f.Stats().Completed)
		}
	})
}

func TestHostRulesValidate(t *testing.T) {
	for _, r := range []HostRules{
		{Blocked: []Match{{}}},
		{Paused: []Match{{Host: "a", Domain: "b"}}},
		{Overrides: map[string]Override{"a": {Delay: -1}}},
		{Overrides: map[string]Override{"": {}}},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%+v: valid", r)
		}
	}
}
