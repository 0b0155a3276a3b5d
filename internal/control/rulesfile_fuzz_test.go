package control

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRulesFile: whatever a rules file holds, loading it either fails or
// gives valid rules that survive a save and a load unchanged, and matching
// hosts against them does not panic.
func FuzzRulesFile(f *testing.F) {
	f.Add([]byte(`{"paused":[{"host":"a"},{}],"blocked":[{"domain":"b.org"}],"overrides":{"a":{"delay":1000000,"factor":2,"max_pages":5}}}`))
	f.Add([]byte(`{"blocked":[{}]}`))
	f.Add([]byte(`{"paused":[],"overrides":{"":{}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), RulesFile)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := loadRules(p)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("loaded invalid rules: %v", err)
		}
		if err := saveRules(p, r); err != nil {
			t.Fatal(err)
		}
		r2, err := loadRules(p)
		if err != nil {
			t.Fatalf("reloading saved rules: %v", err)
		}
		j1, _ := json.Marshal(r)
		j2, _ := json.Marshal(r2)
		if !bytes.Equal(j1, j2) {
			t.Fatalf("round trip changed the rules: %s → %s", j1, j2)
		}
		for _, h := range []string{"a", "b.org:80", "x.b.org", "[::1]:8080", ""} {
			_ = r.State(h)
		}
		_ = Describe(r)
	})
}
