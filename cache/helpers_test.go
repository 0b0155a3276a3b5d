package cache

import "github.com/sextant-crawler/sextant/cache/tracegen"

func mix64(z uint64) uint64 { return tracegen.Mix64(z) }
