package fetcher

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestQuickAckOncePerFetch: TCP_QUICKACK is set once per fetch, after the
// request is written (the kernel's delayed-ACK "pingpong" mode starts when
// we send; reading does not re-enter it), not also before every Read.
// TestPythonHTTPServerNoDelayedACK checks that this is still enough.
func TestQuickAckOncePerFetch(t *testing.T) {
	var calls atomic.Int64
	old := setQuickAck
	setQuickAck = func(fd int) error { calls.Add(1); return old(fd) }
	t.Cleanup(func() { setQuickAck = old })

	body := strings.Repeat("x", 20<<10)
	s := serve(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) })
	f := newTest(t, func(o *Options) { o.MemThreshold = 1 << 20 })
	const fetches = 5
	for range fetches {
		r, err := f.Fetch(context.Background(), s.URL+"/p")
		if err != nil {
			t.Fatal(err)
		}
		if r.Body.Len() != int64(len(body)) {
			t.Fatalf("body %d bytes, want %d", r.Body.Len(), len(body))
		}
		r.Close()
	}
	if n := calls.Load(); n != fetches {
		t.Errorf("%d setsockopt(TCP_QUICKACK) calls for %d fetches on one connection, want %d", n, fetches, fetches)
	}
}
