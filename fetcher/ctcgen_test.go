package fetcher

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sextant-crawler/sextant/internal/fixture"
)

// TestComplianceTableFresh regenerates the transcription from the suite's
// textproto files and compares it with the committed ctc_table_test.go.
func TestComplianceTableFresh(t *testing.T) {
	in := fixture.Path(t, "robots-spec", "src", "main", "resources", "CTC")
	if testing.Short() {
		t.Skip("short mode: skipping go run of the generator")
	}
	out := filepath.Join(t.TempDir(), "ctc.go")
	cmd := exec.Command("go", "run", "./internal/ctcgen", "-in", in, "-out", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ctcgen: %v\n%s", err, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("ctc_table_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("ctc_table_test.go is stale: run go generate ./fetcher")
	}
}
