package procstat

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The test process's own CPU grows while it spins.
func TestCPUOfSelf(t *testing.T) {
	before := CPU(os.Getpid())
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	if after := CPU(os.Getpid()); after <= before {
		t.Fatalf("CPU %v then %v after spinning", before, after)
	}
	if c := CPU(-1); c != 0 {
		t.Fatalf("CPU of no process: %v", c)
	}
}

// CPUModel names the CPU where /proc/cpuinfo has a model name line.
func TestCPUModel(t *testing.T) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo")
	}
	if m := CPUModel(); (m == "") == strings.Contains(string(b), "model name") {
		t.Errorf("CPUModel() = %q", m)
	}
}
