// Package hostile is a test helper: a web server on loopback that misbehaves
// the way broken or malicious servers on the open web do, so that the
// fetcher's defences (caps, timeouts, the private-address guard) are
// exercised by ordinary tests in CI rather than by hand.
//
// It speaks HTTP/1.1 by hand over raw TCP, one request per connection
// ("Connection: close": no client keeps one idle), because the misbehaviour
// (trickled headers, floods of 1xx responses, thousands of header lines) is
// exactly what net/http's server refuses to produce. Endpoints, selected by path (query parameters in brackets):
//
//	/stacked[?n=N&enc=LIST&size=B&lines=1] body encoded with the codings of LIST (gzip, zstd;
//	                                       comma-separated, default gzip) repeated N times,
//	                                       Content-Encoding listing them all (lines=1: one
//	                                       header line each); B random bytes, else Plain
//	/slow-headers[?every=1s]              status line, then header bytes one per interval, forever
//	/slow-body[?every=1s]                 headers, then body bytes one per interval, forever
//	/many-headers[?n=10000]               n distinct header lines, then a short body
//	/informational[?n=100000]             n "103 Early Hints" responses, then a 200
//	/redirect?to=URL                      302 to URL
//	/robots.txt                           302 to RobotsTarget if set, else 404
//	/target                               200 with TargetBody: reaching it means a guard failed
//
// Every request is counted by path (Hits). Targets lists the loopback and
// private addresses of the server in every notation a guard must see
// through.
//
// A Server is safe for concurrent use; Close stops it and waits for its
// goroutines.
package hostile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
)

// TargetBody is the body of /target.
const TargetBody = "reached the loopback target\n"

// Plain is the decoded body of /stacked.
const Plain = "hello from the hostile server\n"

// Server is a hostile HTTP server on 127.0.0.1 (and on [::1] when the host
// has IPv6 loopback).
type Server struct {
	// URL is http://127.0.0.1:PORT, without trailing slash.
	URL string
	// Port is the IPv4 listener's port; Port6 the IPv6 one, 0 if none.
	Port, Port6 int

	// RobotsTarget, if set, is where /robots.txt redirects.
	RobotsTarget atomic.Pointer[string]

	lns    []net.Listener
	wg     sync.WaitGroup
	closed chan struct{}
	mu     struct {
		sync.Mutex
		hits  map[string]int
		conns map[net.Conn]struct{}
		enc   map[string][]byte // encoded /stacked bodies by "enc/n"
	}
}

// New starts a Server. Close it.
func New() (*Server, error) {
	l4, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hostile: %w", err)
	}
	s := &Server{closed: make(chan struct{}), lns: []net.Listener{l4}}
	s.Port = l4.Addr().(*net.TCPAddr).Port
	s.URL = "http://127.0.0.1:" + strconv.Itoa(s.Port)
	if l6, err := net.Listen("tcp", "[::1]:0"); err == nil {
		s.lns = append(s.lns, l6)
		s.Port6 = l6.Addr().(*net.TCPAddr).Port
	}
	s.mu.hits = make(map[string]int)
	s.mu.conns = make(map[net.Conn]struct{})
	s.mu.enc = make(map[string][]byte)
	for _, l := range s.lns {
		s.wg.Add(1)
		go s.accept(l)
	}
	return s, nil
}

// Close stops the listeners, closes open connections (trickling handlers
// end) and waits for every goroutine. Idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		return
	default:
	}
	close(s.closed)
	for c := range s.mu.conns {
		c.Close()
	}
	s.mu.Unlock()
	for _, l := range s.lns {
		l.Close()
	}
	s.wg.Wait()
}

// Listener returns the address of the IPv4 listener ("127.0.0.1:PORT").
func (s *Server) Listener() string { return s.lns[0].Addr().String() }

// Hits returns how many requests for path were received.
func (s *Server) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.hits[path]
}

func (s *Server) accept(l net.Listener) {
	defer s.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		select {
		case <-s.closed:
			s.mu.Unlock()
			c.Close()
			return
		default:
		}
		s.mu.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.mu.conns, c)
		s.mu.Unlock()
	}()
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	s.mu.Lock()
	s.mu.hits[req.URL.Path]++
	s.mu.Unlock()
	q := req.URL.Query()
	w := bufio.NewWriterSize(c, 32<<10)
	defer w.Flush()
	switch req.URL.Path {
	case "/stacked":
		s.stacked(w, q.Get("enc"), atoi(q.Get("n"), 1), atoi(q.Get("size"), 0), q.Get("lines") == "1")
	case "/slow-headers":
		io.WriteString(w, "HTTP/1.1 200 OK\r\nConnection: close\r\nX-Slow: ")
		s.trickle(w, duration(q.Get("every"), time.Second))
	case "/slow-body":
		io.WriteString(w, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n")
		s.trickle(w, duration(q.Get("every"), time.Second))
	case "/many-headers":
		io.WriteString(w, "HTTP/1.1 200 OK\r\nConnection: close\r\n")
		for i := range atoi(q.Get("n"), 10000) {
			fmt.Fprintf(w, "X-Header-%d: v\r\n", i)
		}
		io.WriteString(w, "Content-Length: 3\r\n\r\nok\n")
	case "/informational":
		for range atoi(q.Get("n"), 100000) {
			if _, err := io.WriteString(w, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"); err != nil {
				return // the client gave up
			}
		}
		io.WriteString(w, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nok\n")
	case "/redirect":
		fmt.Fprintf(w, "HTTP/1.1 302 Found\r\nConnection: close\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n", q.Get("to"))
	case "/robots.txt":
		if to := s.RobotsTarget.Load(); to != nil {
			fmt.Fprintf(w, "HTTP/1.1 302 Found\r\nConnection: close\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n", *to)
			return
		}
		io.WriteString(w, "HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
	case "/target":
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(TargetBody), TargetBody)
	default:
		io.WriteString(w, "HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
	}
}

// trickle writes one byte per interval until the connection or the server
// closes.
func (s *Server) trickle(w *bufio.Writer, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if w.WriteByte('a') != nil || w.Flush() != nil {
			return
		}
		select {
		case <-t.C:
		case <-s.closed:
			return
		}
	}
}

func (s *Server) stacked(w *bufio.Writer, enc string, n, size int, lines bool) {
	if enc == "" {
		enc = "gzip"
	}
	var codings []string
	for range n {
		codings = append(codings, strings.Split(enc, ",")...)
	}
	key := fmt.Sprintf("%s/%d/%d", enc, n, size)
	s.mu.Lock()
	body, ok := s.mu.enc[key]
	s.mu.Unlock()
	if !ok {
		plain := []byte(Plain)
		if size > 0 {
			plain = make([]byte, size)
			rand.NewChaCha8([32]byte{}).Read(plain)
		}
		var err error
		if body, err = Nest(plain, codings...); err != nil {
			io.WriteString(w, "HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
			return
		}
		s.mu.Lock()
		s.mu.enc[key] = body
		s.mu.Unlock()
	}
	io.WriteString(w, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\n")
	if lines {
		for _, c := range codings {
			fmt.Fprintf(w, "Content-Encoding: %s\r\n", c)
		}
	} else {
		fmt.Fprintf(w, "Content-Encoding: %s\r\n", strings.Join(codings, ", "))
	}
	fmt.Fprintf(w, "Content-Length: %d\r\n\r\n", len(body))
	w.Write(body)
}

// Nest encodes plain with each coding in turn ("gzip" or "zstd"), the body
// of a response whose Content-Encoding lists codings in the same order. A
// gzip layer adds about 25 bytes, so 1,000 layers of a short text take
// about 25 KB.
func Nest(plain []byte, codings ...string) ([]byte, error) {
	b := plain
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	// The largest window RFC 9659 lets a client accept: a decoder pays up
	// to 8 MiB per layer once a layer's content exceeds it.
	zs, err := zstd.NewWriter(nil, zstd.WithWindowSize(8<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer zs.Close()
	for _, c := range codings {
		switch c {
		case "gzip":
			var buf bytes.Buffer
			zw.Reset(&buf)
			zw.Write(b)
			if err := zw.Close(); err != nil {
				return nil, err
			}
			b = buf.Bytes()
		case "zstd":
			b = zs.EncodeAll(b, nil)
		default:
			return nil, errors.New("hostile: unknown coding " + c)
		}
	}
	return b, nil
}

func atoi(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return n
	}
	return def
}

func duration(s string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d
	}
	return def
}
