package main

import "github.com/sextant-crawler/sextant/simweb"

// setLocality is where a simweb locality knob is applied (none yet).
func setLocality(cfg *simweb.Config, v float64) { _ = cfg; _ = v }
