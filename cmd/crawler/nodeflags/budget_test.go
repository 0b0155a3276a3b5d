package nodeflags

import (
	"errors"
	"flag"
	"testing"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// --soft-pages-per-host defaults to half of --max-pages-per-host, 0 turns
// it off, and a soft budget over the hard one is refused;
// --content-seen-size 0 turns the content-seen test off.
func TestBudgetAndContentSeenFlags(t *testing.T) {
	for _, tc := range []struct {
		args             []string
		soft, hard, seen int
	}{
		{nil, 500, 1000, crawl.DefaultContentSeenSize},
		{[]string{"--max-pages-per-host", "7"}, 3, 7, crawl.DefaultContentSeenSize},
		{[]string{"--max-pages-per-host", "7", "--soft-pages-per-host", "0"}, 0, 7, crawl.DefaultContentSeenSize},
		{[]string{"--max-pages-per-host", "0"}, 0, 0, crawl.DefaultContentSeenSize},
		{[]string{"--max-pages-per-host", "0", "--soft-pages-per-host", "9"}, 9, 0, crawl.DefaultContentSeenSize},
		{[]string{"--soft-pages-per-host", "1000", "--content-seen-size", "0"}, 1000, 1000, -1},
		{[]string{"--content-seen-size", "64"}, 500, 1000, 64},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		nf := Add(fs)
		if err := fs.Parse(append([]string{"--data", t.TempDir()}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		o, err := nf.Options(nil)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if b := o.Frontier.HostBudget; b.Soft != tc.soft || b.Hard != tc.hard || o.ContentSeenSize != tc.seen {
			t.Errorf("%v: frontier budget %+v, content-seen size %d; want soft %d, hard %d, size %d", tc.args, b, o.ContentSeenSize, tc.soft, tc.hard, tc.seen)
		}
	}
	for _, bad := range [][]string{
		{"--soft-pages-per-host", "1001"},
		{"--soft-pages-per-host", "-2"},
		{"--max-pages-per-host", "-1"},
		{"--content-seen-size", "-1"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		nf := Add(fs)
		if err := fs.Parse(append([]string{"--data", t.TempDir()}, bad...)); err != nil {
			t.Fatal(err)
		}
		if _, err := nf.Options(nil); !errors.Is(err, crawl.ErrInvalidOptions) {
			t.Errorf("%v: %v, want crawl.ErrInvalidOptions", bad, err)
		}
	}
}
