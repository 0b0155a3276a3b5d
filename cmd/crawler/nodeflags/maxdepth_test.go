package nodeflags

import (
	"errors"
	"flag"
	"testing"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// --max-depth, --max-pages-per-host and --politeness-key reach the options;
// bad values are refused.
func TestMaxDepthFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	nf := Add(fs)
	if err := fs.Parse([]string{"--data", t.TempDir(), "--max-depth", "3", "--max-pages-per-host", "7", "--politeness-key", "ip"}); err != nil {
		t.Fatal(err)
	}
	o, err := nf.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxDepth != 3 || o.Frontier.HostBudget.Hard != 7 || o.PolitenessKey != crawl.PolitenessIP {
		t.Fatalf("MaxDepth %d, frontier budget %+v", o.MaxDepth, o.Frontier.HostBudget)
	}
	for _, bad := range [][]string{{"--max-depth", "-1"}, {"--max-depth", "65535"}, {"--politeness-key", "domain"}} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		nf := Add(fs)
		if err := fs.Parse(append([]string{"--data", t.TempDir()}, bad...)); err != nil {
			t.Fatal(err)
		}
		if _, err := nf.Options(nil); !errors.Is(err, crawl.ErrInvalidOptions) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
