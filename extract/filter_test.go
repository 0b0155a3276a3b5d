package extract

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestFilter(t *testing.T) {
	long := "http://h.example/" + strings.Repeat("x", 2048)
	for _, tc := range []struct {
		name  string
		opts  FilterOptions
		url   string
		depth int
		seed  string
		want  Reason
	}{
		{"plain", FilterOptions{}, "http://a.example/x", 1, "", Accepted},
		{"https", FilterOptions{}, "https://a.example/x", 1, "", Accepted},
		{"mailto", FilterOptions{}, "mailto:a@b.example", 1, "", RejectScheme},
		{"ftp", FilterOptions{}, "ftp://a.example/", 1, "", RejectScheme},
		{"custom schemes", FilterOptions{Schemes: []string{"HTTPS"}}, "http://a.example/", 1, "", RejectScheme},
		{"no host", FilterOptions{Schemes: []string{"foo"}}, "foo:bar", 1, "", RejectNoHost},
		{"length ok", FilterOptions{}, long[:2048], 1, "", Accepted},
		{"too long", FilterOptions{}, long[:2049], 1, "", RejectLength},
		{"length unlimited", FilterOptions{MaxURLLength: -1}, long, 1, "", Accepted},
		{"depth ok", FilterOptions{MaxDepth: 3}, "http://a.example/", 3, "", Accepted},
		{"too deep", FilterOptions{MaxDepth: 3}, "http://a.example/", 4, "", RejectDepth},
		{"repeats 3 ok", FilterOptions{}, "http://a.example/a/b/a/c/a/", 1, "", Accepted},
		{"repeats 4", FilterOptions{}, "http://a.example/a/b/a/b/a/b/a/", 1, "", RejectRepeatedSegments},
		{"empty segments ignored", FilterOptions{}, "http://a.example/////x", 1, "", Accepted},
		{"repeats unlimited", FilterOptions{MaxRepeatedSegments: -1}, "http://a.example/a/a/a/a/a/a", 1, "", Accepted},
		{"same host", FilterOptions{Scope: ScopeSameHost}, "http://www.a.example/", 1, "WWW.a.example:8080", Accepted},
		{"other host", FilterOptions{Scope: ScopeSameHost}, "http://img.a.example/", 1, "www.a.example", RejectScope},
		{"same host, no seed", FilterOptions{Scope: ScopeSameHost}, "http://img.a.example/", 1, "", RejectScope},
		{"same domain", FilterOptions{Scope: ScopeSameDomain}, "http://img.a.example.co.uk/", 1, "www.a.example.co.uk", Accepted},
		{"other domain under same suffix", FilterOptions{Scope: ScopeSameDomain}, "http://b.co.uk/", 1, "a.co.uk", RejectScope},
		{"same domain, private suffix", FilterOptions{Scope: ScopeSameDomain}, "http://x.github.io/", 1, "y.github.io", RejectScope},
		{"same domain, sim.test", FilterOptions{Scope: ScopeSameDomain}, "http://h2.sim.test/", 1, "h1.sim.test", Accepted},
		{"same domain, IP", FilterOptions{Scope: ScopeSameDomain}, "http://10.0.0.2/", 1, "10.0.0.1", RejectScope},
		{"same domain, same IP", FilterOptions{Scope: ScopeSameDomain}, "http://10.0.0.1/", 1, "10.0.0.1:8080", Accepted},
		{"suffixes", FilterOptions{Scope: ScopeSuffixes, Suffixes: []string{"A.example"}}, "http://deep.sub.a.example/", 1, "", Accepted},
		{"suffixes exact", FilterOptions{Scope: ScopeSuffixes, Suffixes: []string{"a.example"}}, "http://a.example/", 1, "", Accepted},
		{"suffix is not substring", FilterOptions{Scope: ScopeSuffixes, Suffixes: []string{"a.example"}}, "http://ba.example/", 1, "", RejectScope},
		{"allow beats scope", FilterOptions{Scope: ScopeSameHost, Allow: []string{"cdn.example"}}, "http://x.cdn.example/", 1, "a.example", Accepted},
		{"deny", FilterOptions{Deny: []string{"ads.example"}}, "http://t.ads.example/", 1, "", RejectDenied},
		{"deny beats allow", FilterOptions{Allow: []string{"ads.example"}, Deny: []string{"ads.example"}}, "http://ads.example/", 1, "", RejectDenied},
		{"idn list entry", FilterOptions{Deny: []string{"Bücher.example"}}, "http://www.xn--bcher-kva.example/", 1, "", RejectDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFilter(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			ok, r := f.Allow(mustURL(t, tc.url), tc.depth, tc.seed)
			if r != tc.want || ok != (tc.want == Accepted) {
				t.Errorf("Allow(%s) = %v, %v; want %v", tc.url, ok, r, tc.want)
			}
		})
	}
}

func TestFilterOptions(t *testing.T) {
	_, err := NewFilter(FilterOptions{MaxDepth: -1, Scope: ScopeSuffixes, Deny: []string{"a/b"}})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"MaxDepth", "Suffixes", `"a/b"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// the caller's slices are copied
	schemes := []string{"http"}
	f, _ := NewFilter(FilterOptions{Schemes: schemes})
	schemes[0] = "ftp"
	if ok, _ := f.Allow(mustURL(t, "http://a.example/"), 0, ""); !ok {
		t.Error("filter shares the caller's Schemes slice")
	}
	for r := Reason(0); r <= NumReasons; r++ {
		if r.String() == "" {
			t.Errorf("empty name for %d", r)
		}
	}
}

func TestHostBudget(t *testing.T) {
	b, err := NewHostBudget(BudgetOptions{Soft: 2, Hard: 4})
	if err != nil {
		t.Fatal(err)
	}
	var got []Priority
	for range 6 {
		got = append(got, b.Admit("trap.example"))
	}
	want := []Priority{PriorityNormal, PriorityNormal, PriorityLow, PriorityLow, PriorityDrop, PriorityDrop}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("verdicts %v, want %v", got, want)
	}
	if !b.Take("other.example") || b.Count("trap.example") != 4 || b.Count("other.example") != 1 {
		t.Error("hosts are not independent")
	}
	st := b.Stats()
	if st != (BudgetStats{Hosts: 2, Normal: 3, Low: 2, Dropped: 2}) {
		t.Errorf("stats %+v", st)
	}
	if _, err := NewHostBudget(BudgetOptions{Soft: 5, Hard: 3}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Soft > Hard accepted: %v", err)
	}
	unl, _ := NewHostBudget(BudgetOptions{})
	for range 1000 {
		if unl.Admit("h") != PriorityNormal {
			t.Fatal("zero budget must be unlimited")
		}
	}
}

// TestHostBudgetConcurrent checks the hard budget is exact under
// contention (run with -race).
func TestHostBudgetConcurrent(t *testing.T) {
	b, _ := NewHostBudget(BudgetOptions{Soft: 50, Hard: 100, Shards: 4})
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := map[string]int{}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				h := fmt.Sprintf("h%d", (i+w)%5)
				if b.Take(h) {
					mu.Lock()
					admitted[h]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for h, n := range admitted {
		if n != 100 {
			t.Errorf("%s admitted %d, want exactly 100", h, n)
		}
	}
}
