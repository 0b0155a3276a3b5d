package crawl

import (
	"errors"
	"flag"
	"testing"
)

// --max-depth reaches Options.MaxDepth; out-of-range values are refused.
func TestMaxDepthFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	nf := AddNodeFlags(fs)
	if err := fs.Parse([]string{"--data", t.TempDir(), "--max-depth", "3", "--max-pages-per-host", "7"}); err != nil {
		t.Fatal(err)
	}
	o, err := nf.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxDepth != 3 || o.Frontier.HostBudget.Hard != 7 {
		t.Fatalf("MaxDepth %d, frontier budget %+v", o.MaxDepth, o.Frontier.HostBudget)
	}
	for _, bad := range []string{"-1", "65535"} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		nf := AddNodeFlags(fs)
		if err := fs.Parse([]string{"--data", t.TempDir(), "--max-depth", bad}); err != nil {
			t.Fatal(err)
		}
		if _, err := nf.Options(nil); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("--max-depth %s: %v", bad, err)
		}
	}
}
