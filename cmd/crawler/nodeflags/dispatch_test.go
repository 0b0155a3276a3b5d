package nodeflags

import (
	"errors"
	"flag"
	"testing"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/crawl"
)

// --dispatch reaches the frontier's options (default any); a bad mode is
// refused.
func TestDispatchFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, frontier.DispatchAny},
		{[]string{"--dispatch", "host-affine"}, frontier.DispatchHostAffine},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		nf := Add(fs)
		if err := fs.Parse(append([]string{"--data", t.TempDir()}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		o, err := nf.Options(nil)
		if err != nil {
			t.Fatal(err)
		}
		if o.Frontier.Dispatch != tc.want {
			t.Errorf("%v: Dispatch %q, want %q", tc.args, o.Frontier.Dispatch, tc.want)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	nf := Add(fs)
	if err := fs.Parse([]string{"--data", t.TempDir(), "--dispatch", "affine"}); err != nil {
		t.Fatal(err)
	}
	if _, err := nf.Options(nil); !errors.Is(err, crawl.ErrInvalidOptions) {
		t.Errorf("--dispatch affine: %v, want ErrInvalidOptions", err)
	}
}
