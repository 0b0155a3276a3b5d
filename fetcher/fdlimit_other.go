//go:build !unix

package fetcher

// openFileLimit is unknown here (see fdlimit_unix.go).
func openFileLimit() int { return 0 }
