package fetcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHouseRules bans, in this package's non-test code, what STYLE.md
// rules out for a crawler library: the default HTTP client (no deadlines),
// sleeping, exiting, reading flags or the environment.
func TestHouseRules(t *testing.T) {
	banned := []string{"http.DefaultClient", "http.Get(", "time.Sleep(", "os.Exit(", "flag.", "os.Getenv("}
	files, _ := filepath.Glob("*.go")
	more, _ := filepath.Glob(filepath.Join("..", "internal", "netguard", "*.go"))
	for _, name := range append(files, more...) {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range banned {
			if strings.Contains(string(src), b) {
				t.Errorf("%s uses %s", name, b)
			}
		}
	}
}
