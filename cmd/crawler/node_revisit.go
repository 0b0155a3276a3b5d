package main

import (
	"flag"
	"time"

	"github.com/sextant-crawler/sextant/internal/nodeconfig"
)

// nodeRevisitFlags are crawler node's --revisit, --revisit-min and
// --revisit-max, overriding the config's revisit keys.
type nodeRevisitFlags struct {
	mode     string
	min, max time.Duration
}

func addNodeRevisitFlags(fs *flag.FlagSet) *nodeRevisitFlags {
	r := &nodeRevisitFlags{}
	fs.StringVar(&r.mode, "revisit", "", "continuous crawling, overriding the config's \"revisit\": off, a DURATION or adaptive (see 'crawler crawl -h'); the node then never reports the crawl done and runs until SIGTERM")
	fs.DurationVar(&r.min, "revisit-min", 0, "shortest interval of --revisit adaptive, overriding the config's \"revisit_min\"")
	fs.DurationVar(&r.max, "revisit-max", 0, "longest interval of --revisit adaptive, overriding the config's \"revisit_max\"")
	return r
}

// apply sets the flags given into cfg and validates it again.
func (r *nodeRevisitFlags) apply(cfg *nodeconfig.Config) error {
	if r.mode == "" && r.min == 0 && r.max == 0 {
		return nil
	}
	if r.mode != "" {
		cfg.Revisit = r.mode
	}
	if r.min != 0 {
		d := nodeconfig.Duration(r.min)
		cfg.RevisitMin = &d
	}
	if r.max != 0 {
		d := nodeconfig.Duration(r.max)
		cfg.RevisitMax = &d
	}
	if err := cfg.Validate(); err != nil {
		return usagef("%s", oneLine(err))
	}
	return nil
}
