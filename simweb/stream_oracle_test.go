package simweb

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The streaming oracle finds exactly the in-memory oracle's set and counts,
// on webs with every pathology, HTTPS, plain HTTP and a depth limit, while spilling runs of a few URLs (so that merging is exercised).
func TestStreamOracleMatchesOracle(t *testing.T) {
	small := SmallConfig()
	plain := DefaultConfig()
	plain.Hosts, plain.PagesPerHost, plain.NoPathologies, plain.SitemapShare = 60, 20, true, 0
	plain.HTTPSShare, plain.RedirectHTTPSShare, plain.H2Share, plain.HSTSShare = 0, 0, 0, 0
	https := DefaultConfig()
	https.Hosts, https.PagesPerHost = 40, 30
	for _, tc := range []struct {
		name  string
		cfg   Config
		rules Rules
	}{
		{"small", small, Rules{}},
		{"small-depth-3", small, Rules{MaxDepth: 3}},
		{"plain", plain, Rules{}},
		{"https", https, Rules{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWeb(t, tc.cfg)
			want, err := w.Oracle(w.Seeds(), tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "fetched")
			got, err := w.streamOracle(w.Seeds(), tc.rules, t.TempDir(), out, 97)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if !reflect.DeepEqual(lines, want.Fetched) {
				t.Fatalf("streamed set (%d URLs) differs from the oracle's (%d)", len(lines), len(want.Fetched))
			}
			if got.Fetched != int64(len(want.Fetched)) || got.Disallowed != int64(want.Disallowed) ||
				got.OutOfScope != int64(want.OutOfScope) || got.Links != int64(want.Links) ||
				!reflect.DeepEqual(got.TrapHosts, want.TrapHosts) {
				t.Errorf("streamed counts %+v, oracle fetched %d disallowed %d out of scope %d links %d traps %v",
					got, len(want.Fetched), want.Disallowed, want.OutOfScope, want.Links, want.TrapHosts)
			}
			for st, n := range want.ByStatus {
				if got.ByStatus[st] != int64(n) {
					t.Errorf("status %d: streamed %d, oracle %d", st, got.ByStatus[st], n)
				}
			}
			if len(got.ByStatus) != len(want.ByStatus) {
				t.Errorf("statuses: streamed %v, oracle %v", got.ByStatus, want.ByStatus)
			}
			if got.Levels < 2 || got.MaxHostURLs < 1 {
				t.Errorf("levels %d, max host URLs %d", got.Levels, got.MaxHostURLs)
			}
		})
	}
}

func TestStreamOracleErrors(t *testing.T) {
	w := newWeb(t, SmallConfig())
	dir := t.TempDir()
	if _, err := w.StreamOracle(w.Seeds(), Rules{Sitemaps: true}, dir, filepath.Join(dir, "o")); !errors.Is(err, ErrStreamSitemaps) {
		t.Errorf("sitemaps: %v", err)
	}
	if _, err := w.StreamOracle(w.Seeds(), Rules{MaxPagesPerHost: 10}, dir, filepath.Join(dir, "o")); !errors.Is(err, ErrBudget) {
		t.Errorf("tiny budget: %v", err)
	}
	if _, err := w.StreamOracle([]string{"http://[::1"}, Rules{}, dir, filepath.Join(dir, "o")); err == nil {
		t.Errorf("a bad seed: no error")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "stream-oracle-*")); len(left) > 0 {
		t.Errorf("work files left behind: %v", left)
	}
}
