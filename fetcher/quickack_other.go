//go:build !linux

package fetcher

import "net"

// quickAck is a no-op where TCP_QUICKACK does not exist (see
// quickack_linux.go).
func quickAck(c net.Conn) net.Conn { return c }
