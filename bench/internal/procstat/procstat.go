// Package procstat reads a process's CPU time from /proc, for the bench
// harnesses that report a server's or a crawler's cost beside their own.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CPU is process pid's user+system CPU seconds so far (0 if it is gone).
func CPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:] // the command may hold spaces and parentheses
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	// Fields after the command: state(0) … utime(11) stime(12), in clock ticks.
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

// CPUModel is the "model name" of the first CPU in /proc/cpuinfo ("" if
// unknown): a benchmark's ratios depend on it, so reports name it.
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
