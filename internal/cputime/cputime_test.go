package cputime

import (
	"runtime"
	"testing"
)

// Spinning for a while must show as CPU time where the platform reports it.
func TestProcessAdvancesWithWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no process CPU time on", runtime.GOOS)
	}
	start := Process()
	x := uint64(1)
	for Process()-start <= 0 {
		for i := 0; i < 1_000_000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if x == 0 {
		t.Log(x) // keep the loop
	}
}
