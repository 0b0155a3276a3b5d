//go:build unix

package simweb

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time, so that benchmarks on a
// shared machine can report CPU cost as well as wall-clock rates.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
