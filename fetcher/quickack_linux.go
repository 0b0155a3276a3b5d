package fetcher

import (
	"net"
	"syscall"
)

// quickAck wraps a dialed TCP connection so that each Write (a request)
// is followed by TCP_QUICKACK: the response's segments are ACKed at once
// instead of after Linux's delayed-ACK timer (40 ms or more). Servers that
// write the header and the body in two small writes without TCP_NODELAY
// (Python's http.server, many small ones) hold the body back under Nagle
// until the header is ACKed, so every such fetch took ≥ 40 ms, and the
// politeness delay (Factor × duration) multiplied it. The flag is not
// sticky: Linux goes back to delayed ACKs ("pingpong" mode) when it sends
// data soon after receiving some, that is when the next request is
// written, so the flag is set after every Write, and only then: reads do
// not turn pingpong mode back on, and setting it before each Read as well
// cost 3–4 setsockopt calls per fetch instead of 1
// (TestQuickAckOncePerFetch). See TestPythonHTTPServerNoDelayedACK.
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

// quickAckConn embeds net.Conn, not *net.TCPConn: a promoted ReadFrom
// would let io.Copy write around Write.
type quickAckConn struct {
	net.Conn
	rc syscall.RawConn
}

// Write arms after sending: the transport's reader may already be blocked
// in Read when the request goes out, so arming before a Read would come
// too late for this response.
func (c *quickAckConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.arm()
	return n, err
}

func (c *quickAckConn) arm() {
	_ = c.rc.Control(func(fd uintptr) { _ = setQuickAck(int(fd)) })
}

// setQuickAck is the setsockopt call (a variable: tests count the calls).
var setQuickAck = func(fd int) error {
	return syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
}
