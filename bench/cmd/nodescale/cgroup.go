package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrCgroup is returned when a CPU-limited cgroup cannot be made.
var ErrCgroup = errors.New("nodescale: cgroup")

// cgroup is one node's CPU-limited group: cgroup v2's cpu.max where the
// unified hierarchy has the cpu controller, else cgroup v1's cpu
// (cfs_quota_us, shares) and cpuacct hierarchies (a hybrid host, like the
// Firecracker VM this harness was first run on).
type cgroup struct {
	v2   bool
	dirs []string // every directory the process must join
	cpu  string   // the dir with cpu.stat (quota, throttling)
	acct string   // the dir with the usage counter
}

// cgroupRoots are where the hierarchies are mounted (a variable for tests).
var cgroupRoots = struct{ unified, cpu, cpuacct string }{
	unified: "/sys/fs/cgroup", cpu: "/sys/fs/cgroup/cpu", cpuacct: "/sys/fs/cgroup/cpuacct",
}

// unifiedRoot is the cgroup2 mount that has the cpu controller, or "".
func unifiedRoot() string {
	for _, d := range []string{cgroupRoots.unified, filepath.Join(cgroupRoots.unified, "unified")} {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.controllers"))
		if err == nil && hasWord(string(b), "cpu") {
			return d
		}
	}
	return ""
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// newCgroup makes group name limited to cores CPUs (quota per 100 ms
// period; 0: no quota). weight raises the group's share so that, on a shared machine,
// the quota rather than the other tenants' load is what binds (v1 shares;
// v2 cpu.weight, 1..10000).
func newCgroup(name string, cores float64, weight int) (*cgroup, error) {
	const period = 100000
	quota := int(cores * period)
	q1, q2 := strconv.Itoa(quota), strconv.Itoa(quota)
	switch {
	case cores == 0: // no quota: only the weight (simweb's group)
		q1, q2 = "-1", "max"
	case quota < 1000:
		return nil, fmt.Errorf("%w: a quota of %v cores is below 1 ms per period", ErrCgroup, cores)
	}
	if root := unifiedRoot(); root != "" {
		// The parent must delegate cpu to its children.
		_ = os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+cpu"), 0o644)
		d := filepath.Join(root, name)
		cg := &cgroup{v2: true, dirs: []string{d}, cpu: d, acct: d}
		w := min(max(weight/100, 1), 10000)
		files := map[string]string{"cpu.max": fmt.Sprintf("%s %d", q2, period), "cpu.weight": strconv.Itoa(w)}
		return cg, cg.make(files)
	}
	if _, err := os.Stat(filepath.Join(cgroupRoots.cpu, "cpu.cfs_quota_us")); err != nil {
		return nil, fmt.Errorf("%w: neither a cgroup2 hierarchy with the cpu controller nor cgroup v1's cpu: %w", ErrCgroup, err)
	}
	cpu, acct := filepath.Join(cgroupRoots.cpu, name), filepath.Join(cgroupRoots.cpuacct, name)
	cg := &cgroup{dirs: []string{cpu}, cpu: cpu, acct: cpu}
	if _, err := os.Stat(filepath.Join(cgroupRoots.cpu, "cpuacct.usage")); err != nil {
		// cpu and cpuacct mounted apart: join both.
		cg.dirs, cg.acct = append(cg.dirs, acct), acct
	}
	files := map[string]string{"cpu.cfs_period_us": strconv.Itoa(period), "cpu.cfs_quota_us": q1,
		"cpu.shares": strconv.Itoa(weight)}
	return cg, cg.make(files)
}

// make creates the directories (a leftover of a killed run is reused) and
// writes the limits into the cpu one.
func (c *cgroup) make(files map[string]string) error {
	for _, d := range c.dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("%w: %w", ErrCgroup, err)
		}
	}
	for f, v := range files {
		if err := os.WriteFile(filepath.Join(c.cpu, f), []byte(v), 0o644); err != nil {
			return fmt.Errorf("%w: %s = %s: %w", ErrCgroup, f, v, err)
		}
	}
	return nil
}

// joinScript is a shell prefix that moves the shell into the group before
// it execs the node: every thread the node makes is in the group from its
// first instruction.
func (c *cgroup) joinScript() string {
	var b strings.Builder
	for _, d := range c.dirs {
		fmt.Fprintf(&b, "echo $$ > %s && ", filepath.Join(d, "cgroup.procs"))
	}
	return b.String()
}

// usage is the group's CPU time so far, in seconds.
func (c *cgroup) usage() (float64, error) {
	if c.v2 {
		m, err := readKV(filepath.Join(c.cpu, "cpu.stat"))
		return float64(m["usage_usec"]) / 1e6, err
	}
	b, err := os.ReadFile(filepath.Join(c.acct, "cpuacct.usage"))
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return float64(ns) / 1e9, err
}

// throttled is the time the group was held back by its quota, in seconds,
// and the number of periods in which it was.
func (c *cgroup) throttled() (secs float64, periods int64, err error) {
	m, err := readKV(filepath.Join(c.cpu, "cpu.stat"))
	if c.v2 {
		return float64(m["throttled_usec"]) / 1e6, m["nr_throttled"], err
	}
	return float64(m["throttled_time"]) / 1e9, m["nr_throttled"], err
}

// readKV reads a cgroup "key value" file.
func readKV(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseKV(string(b)), nil
}

func parseKV(s string) map[string]int64 {
	m := map[string]int64{}
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) == 2 {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				m[f[0]] = n
			}
		}
	}
	return m
}

// remove deletes the (empty) groups.
func (c *cgroup) remove() {
	for _, d := range c.dirs {
		_ = os.Remove(d)
	}
}
