package fetcher

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// KeepWire keeps a content-encoded body as received beside the decoded
// one (trailing bytes after the gzip stream included); an identity body is
// not copied (Wire nil, WireBody reads Body); without KeepWire nothing is
// kept. The request header sent is reported.
func TestKeepWire(t *testing.T) {
	plain := bytes.Repeat([]byte("<p>wire</p>\n"), 300)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(plain)
	zw.Close()
	sent := append(z.Bytes(), "trailing"...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gz" {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(sent)
			return
		}
		w.Write(plain)
	}))
	defer srv.Close()
	for _, keep := range []bool{false, true} {
		f, err := New(Options{AllowPrivate: true, KeepWire: keep, UserAgent: "wire-test/1"})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/gz", "/plain"} {
			r, err := f.Fetch(context.Background(), srv.URL+path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(r.Body.NewReader())
			wire, _ := io.ReadAll(r.WireBody())
			if !bytes.Equal(body, plain) {
				t.Errorf("keep %v %s: decoded body differs", keep, path)
			}
			switch {
			case path == "/gz" && keep:
				if !bytes.Equal(wire, sent) {
					t.Errorf("KeepWire: wire body %d bytes, sent %d", len(wire), len(sent))
				}
			case r.Wire != nil:
				t.Errorf("keep %v %s: a wire copy was kept", keep, path)
			}
			if r.RequestHeader.Get("User-Agent") != "wire-test/1" || r.RequestHeader.Get("Accept-Encoding") == "" || r.StatusText != "200 OK" {
				t.Errorf("request header %v, status %q", r.RequestHeader, r.StatusText)
			}
			r.Close()
		}
		f.Close()
	}
}
