package nodeflags

import (
	"flag"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/revisit"
)

// revisitFlags are --revisit, --revisit-min and --revisit-max.
type revisitFlags struct {
	mode string
}

func (f *NodeFlags) addRevisit(fs *flag.FlagSet) {
	d := crawl.DefaultOptions().Revisit
	fs.StringVar(&f.rv.mode, "revisit", "off", "continuous crawling: off, a DURATION (every URL fetched is fetched again that long after, with If-None-Match/If-Modified-Since; a 304 counts as unchanged) or adaptive (the interval halves when the page changed and doubles when not, within --revisit-min and --revisit-max; Cho & Garcia-Molina). With it the crawl never ends by itself: it runs until stopped (SIGTERM, Ctrl-C) or a limit (--duration, --max-fetches)")
	fs.Duration("revisit-min", d.Min, "shortest interval of --revisit adaptive: no URL is fetched more often")
	fs.Duration("revisit-max", d.Max, "longest interval of --revisit adaptive")
}

// revisitOptions sets o from the revisit flags.
func (f *NodeFlags) revisitOptions(o *revisit.Options, bad func(format string, args ...any)) {
	var err error
	if o.Interval, o.Adaptive, err = revisit.Parse(f.rv.mode); err != nil {
		bad("--revisit %q: want off, adaptive or a positive duration such as 24h", f.rv.mode)
		return
	}
	o.Min = f.fs.Lookup("revisit-min").Value.(flag.Getter).Get().(time.Duration)
	o.Max = f.fs.Lookup("revisit-max").Value.(flag.Getter).Get().(time.Duration)
	if o.Adaptive && (o.Min <= 0 || o.Max < o.Min) {
		bad("--revisit-min %v, --revisit-max %v: want 0 < min ≤ max", o.Min, o.Max)
	}
}
