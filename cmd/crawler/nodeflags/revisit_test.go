package nodeflags

import (
	"errors"
	"flag"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// --revisit and its bounds reach the options (off by default); bad values
// are refused.
func TestRevisitFlags(t *testing.T) {
	parse := func(args ...string) (crawl.Options, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		nf := Add(fs)
		if err := fs.Parse(append([]string{"--data", t.TempDir()}, args...)); err != nil {
			t.Fatal(err)
		}
		return nf.Options(nil)
	}
	o, err := parse()
	if err != nil || o.Revisit.Enabled() {
		t.Fatalf("default: %+v %v, want off", o.Revisit, err)
	}
	if o, err = parse("--revisit", "adaptive", "--revisit-min", "1m", "--revisit-max", "2h"); err != nil {
		t.Fatal(err)
	}
	if r := o.Revisit; !r.Adaptive || r.Min != time.Minute || r.Max != 2*time.Hour || r.Interval <= r.Min || r.Interval >= r.Max {
		t.Fatalf("adaptive: %+v", r)
	}
	if o, err = parse("--revisit", "90s"); err != nil || o.Revisit.Interval != 90*time.Second || o.Revisit.Adaptive {
		t.Fatalf("fixed: %+v %v", o.Revisit, err)
	}
	for _, bad := range [][]string{{"--revisit", "often"}, {"--revisit", "adaptive", "--revisit-min", "2h", "--revisit-max", "1h"}, {"--revisit", "-5s"}} {
		if _, err := parse(bad...); !errors.Is(err, crawl.ErrInvalidOptions) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
