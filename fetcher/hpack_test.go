package fetcher

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// recordConn keeps what the server reads from a TLS connection, decrypted.
type recordConn struct {
	*tls.Conn
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (c *recordConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.buf.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

// TestHTTP2HeaderBlocksStandAlone: over h2 the fetcher indexes no request
// header, so every request's header block decodes with a fresh HPACK
// decoder. Indexing (net/http's default) made each block refer to the
// table the earlier requests filled, and each request's new :path evict
// entries on both sides, for no gain: a crawler never sends a path twice.
func TestHTTP2HeaderBlocksStandAlone(t *testing.T) {
	var mu sync.Mutex
	var in bytes.Buffer
	s, pool := tlsServer(t, true, func(s *httptest.Server) {
		s.Config.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){
			"h2": func(hs *http.Server, c *tls.Conn, h http.Handler) {
				(&http2.Server{}).ServeConn(&recordConn{Conn: c, mu: &mu, buf: &in}, &http2.ServeConnOpts{BaseConfig: hs, Handler: h})
			},
		}
	}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page") })
	f := newTest(t, trusting(pool))
	const requests = 4
	for i := range requests {
		if r := mustFetch(t, f, s.URL+"/p"+strconv.Itoa(i)); r.Proto != "HTTP/2.0" {
			t.Fatalf("Proto %q, want HTTP/2.0", r.Proto)
		}
	}
	mu.Lock()
	data := bytes.Clone(in.Bytes())
	mu.Unlock()
	if !bytes.HasPrefix(data, []byte(http2.ClientPreface)) {
		t.Fatalf("no h2 client preface in %d bytes read", len(data))
	}
	fr := http2.NewFramer(io.Discard, bytes.NewReader(data[len(http2.ClientPreface):]))
	var blocks [][]byte
	for {
		frame, err := fr.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatal(err)
			}
			break
		}
		if h, ok := frame.(*http2.HeadersFrame); ok {
			if !h.HeadersEnded() {
				t.Fatal("request headers in CONTINUATION frames: not expected here")
			}
			blocks = append(blocks, bytes.Clone(h.HeaderBlockFragment()))
		}
	}
	if len(blocks) != requests {
		t.Fatalf("%d HEADERS frames, want %d", len(blocks), requests)
	}
	for i, b := range blocks {
		fields, err := hpack.NewDecoder(4096, nil).DecodeFull(b)
		if err != nil {
			t.Fatalf("request %d's header block needs an earlier one's table: %v", i, err)
		}
		path := ""
		for _, hf := range fields {
			if hf.Name == ":path" {
				path = hf.Value
			}
		}
		if want := "/p" + strconv.Itoa(i); path != want {
			t.Errorf("request %d: :path %q, want %q", i, path, want)
		}
	}
}
