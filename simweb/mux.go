package simweb

import (
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// muxListener serves plain HTTP and TLS on one port, as the first byte of
// a connection tells (0x16 opens a TLS handshake record; no HTTP method
// starts with it). One port for both lets a crawler reach every host with
// one --resolve DOMAIN=IP:PORT, whatever the URL's scheme.
//
// Accept must not block on a client that connects and sends nothing, so
// each connection is sniffed in its own goroutine, owned by the listener:
// Close stops them (their reads are cut) and waits for them.
type muxListener struct {
	net.Listener
	conf  *tls.Config
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
	mu    sync.Mutex
	sniff map[net.Conn]struct{} // connections whose first byte is awaited
}

// sniffTimeout bounds the wait for a new connection's first byte.
const sniffTimeout = 10 * time.Second

func newMux(ln net.Listener, conf *tls.Config) *muxListener {
	m := &muxListener{Listener: ln, conf: conf, conns: make(chan net.Conn),
		done: make(chan struct{}), sniff: map[net.Conn]struct{}{}}
	m.wg.Add(1)
	go m.loop()
	return m
}

func (m *muxListener) loop() {
	defer m.wg.Done()
	for {
		c, err := m.Listener.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			m.shut()
			return
		}
		m.mu.Lock()
		select {
		case <-m.done:
			m.mu.Unlock()
			c.Close()
			return
		default:
		}
		m.sniff[c] = struct{}{}
		m.wg.Add(1)
		m.mu.Unlock()
		go m.classify(c)
	}
}

// classify reads c's first byte and hands the connection to Accept.
func (m *muxListener) classify(c net.Conn) {
	defer m.wg.Done()
	var b [1]byte
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	n, err := c.Read(b[:])
	_ = c.SetReadDeadline(time.Time{})
	m.mu.Lock()
	delete(m.sniff, c)
	m.mu.Unlock()
	if err != nil || n == 0 {
		c.Close()
		return
	}
	var conn net.Conn = &prefixConn{Conn: c, first: b[0], has: true}
	if b[0] == 0x16 {
		conn = tls.Server(conn, m.conf)
	}
	select {
	case m.conns <- conn:
	case <-m.done:
		conn.Close()
	}
}

// Accept returns the next classified connection.
func (m *muxListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.done:
		return nil, net.ErrClosed
	}
}

// Close closes the listener, cuts the connections still being sniffed and
// waits for every goroutine of the listener.
func (m *muxListener) Close() error {
	err := m.shut()
	m.wg.Wait()
	return err
}

// shut closes without waiting (the accept loop calls it on a fatal error).
func (m *muxListener) shut() error {
	var err error
	m.once.Do(func() {
		m.mu.Lock()
		close(m.done)
		for c := range m.sniff {
			_ = c.SetReadDeadline(time.Now())
		}
		m.mu.Unlock()
		err = m.Listener.Close()
	})
	return err
}

// prefixConn gives back the sniffed first byte before reading on.
type prefixConn struct {
	net.Conn
	first byte
	has   bool
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if p.has && len(b) > 0 {
		b[0], p.has = p.first, false
		return 1, nil
	}
	return p.Conn.Read(b)
}

// CloseWrite half-closes like the *net.TCPConn it wraps (net/http uses it
// to end a response cleanly before closing).
func (p *prefixConn) CloseWrite() error {
	if cw, ok := p.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
