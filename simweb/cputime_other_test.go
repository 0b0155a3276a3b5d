//go:build !unix

package simweb

import "time"

func cpuTime() time.Duration { return 0 }
