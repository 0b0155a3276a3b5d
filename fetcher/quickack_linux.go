package fetcher

import (
	"net"
	"syscall"
)

// quickAck wraps a dialed TCP connection so that every Read first turns on
// TCP_QUICKACK: the response's segments are ACKed at once instead of after
// Linux's delayed-ACK timer (40 ms or more). Servers that write the header
// and the body in two small writes without TCP_NODELAY (Python's
// http.server, many small ones) hold the body back under Nagle until the
// header is ACKed, so every such fetch took ≥ 40 ms, and the politeness
// delay (Factor × duration) multiplied it. The flag is not sticky (the
// kernel drops back to delayed ACKs once it sees request/response
// traffic), hence before every Read and after every Write: one cheap
// setsockopt each. See
// TestPythonHTTPServerNoDelayedACK.
func quickAck(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &quickAckConn{Conn: c, rc: rc}
}

// quickAckConn embeds net.Conn, not *net.TCPConn: a promoted WriteTo would
// let io.Copy read around Read.
type quickAckConn struct {
	net.Conn
	rc syscall.RawConn
}

func (c *quickAckConn) Read(p []byte) (int, error) {
	c.arm()
	return c.Conn.Read(p)
}

// Write re-arms after sending too: sending data right after receiving some
// puts Linux back into delayed-ACK ("pingpong") mode, and the transport's
// reader may already be blocked in Read when the request goes out.
func (c *quickAckConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.arm()
	return n, err
}

func (c *quickAckConn) arm() {
	_ = c.rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
	})
}
