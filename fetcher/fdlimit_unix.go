//go:build unix

package fetcher

import "syscall"

// openFileLimit is the process's limit on open descriptors (0: unknown).
// Go raises the soft limit to the hard one at start on Linux, so this is
// what the process can use.
func openFileLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<30 {
		return 0
	}
	return int(l.Cur)
}
