// Package cputime reads the process's CPU time, for benchmarks that report
// CPU per operation: on a shared, loaded machine wall time includes waiting
// for a core, CPU time does not.
package cputime

import "time"

// Process is the process's user+system CPU time so far, or 0 where the
// platform does not report it. Benchmarks take the difference of two calls.
func Process() time.Duration { return process() }
