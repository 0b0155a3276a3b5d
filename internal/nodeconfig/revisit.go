package nodeconfig

import (
	"time"

	"github.com/sextant-crawler/sextant/revisit"
)

// revisitOptions sets o (crawl.DefaultOptions' Revisit) from the revisit
// keys; Validate has checked them.
func (c *Config) revisitOptions(o *revisit.Options) {
	o.Interval, o.Adaptive, _ = revisit.Parse(c.Revisit)
	if c.RevisitMin != nil {
		o.Min = time.Duration(*c.RevisitMin)
	}
	if c.RevisitMax != nil {
		o.Max = time.Duration(*c.RevisitMax)
	}
}

func (c *Config) validateRevisit(bad func(format string, args ...any)) {
	var o revisit.Options
	if _, _, err := revisit.Parse(c.Revisit); err != nil {
		bad("revisit %q: want off, adaptive or a positive duration such as \"24h\"", c.Revisit)
		return
	}
	o = revisit.Options{Min: revisit.DefaultMin, Max: revisit.DefaultMax}
	c.revisitOptions(&o)
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		bad("revisit_min/revisit_max: %v", err)
	}
}
