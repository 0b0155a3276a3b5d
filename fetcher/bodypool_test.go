package fetcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// A reader of a RewindBuffer fails once the buffer is closed, in memory or
// spilled: its memory may already hold another page (bodies are pooled).
// On the old code a reader made before Close went on reading the body.
func TestRewindBufferReaderAfterClose(t *testing.T) {
	for _, size := range []int{100, 10 << 10} { // in memory, spilled
		b := NewRewindBuffer(4<<10, t.TempDir())
		if _, err := b.ReadFrom(strings.NewReader(strings.Repeat("a", size))); err != nil {
			t.Fatal(err)
		}
		r := b.NewReader()
		var one [1]byte
		if _, err := r.Read(one[:]); err != nil || one[0] != 'a' {
			t.Fatalf("size %d: read %q, %v", size, one, err)
		}
		b.Close()
		// Another buffer takes the memory back from the pool.
		o := NewRewindBuffer(4<<10, t.TempDir())
		o.ReadFrom(strings.NewReader(strings.Repeat("b", size)))
		if n, err := r.Read(one[:]); n != 0 || !errors.Is(err, ErrBufferClosed) {
			t.Errorf("size %d: read after Close: %d bytes (%q), %v; want ErrBufferClosed", size, n, one[:n], err)
		}
		if _, err := io.ReadAll(b.NewReader()); !errors.Is(err, ErrBufferClosed) {
			t.Errorf("size %d: NewReader after Close: %v", size, err)
		}
		if m, ok := b.Bytes(); ok || m != nil {
			t.Errorf("size %d: Bytes after Close: %d bytes, %v", size, len(m), ok)
		}
		o.Close()
	}
}

// The pool keeps size classes only, none above 256 KiB, and at most
// poolMaxHeld bytes in all.
func TestBodyPoolBounded(t *testing.T) {
	p := &bodyPool{max: poolMaxHeld}
	for _, n := range []int{0, 1, 4096, 4097, 20 << 10, 256 << 10} {
		b := p.get(n)
		if len(b) != 0 || cap(b) < n || cap(b)&(cap(b)-1) != 0 {
			t.Errorf("get(%d): len %d cap %d", n, len(b), cap(b))
		}
	}
	if b := p.get(256<<10 + 1); cap(b) != 256<<10+1 {
		t.Errorf("get above the largest class: cap %d", cap(b))
	}
	p.put(make([]byte, 0, 512<<10))
	p.put(make([]byte, 0, 5000))
	if h := p.heldBytes(); h != 0 {
		t.Errorf("held %d bytes after putting a too-large and an odd-sized buffer", h)
	}
	for range 100 {
		p.put(make([]byte, 10, 256<<10))
		p.put(make([]byte, 0, 4<<10))
	}
	if h := p.heldBytes(); h > poolMaxHeld || h < poolMaxHeld-(256<<10) {
		t.Errorf("held %d bytes, want ≤ %d and nearly full", h, poolMaxHeld)
	}
	if b := p.get(200 << 10); len(b) != 0 || cap(b) != 256<<10 {
		t.Errorf("reused buffer: len %d cap %d", len(b), cap(b))
	}
}

// Concurrent fetches of distinct pages, each closed right after it is
// checked: no body ever shows another page's bytes (run with -race).
func TestPooledBodiesConcurrent(t *testing.T) {
	page := func(i int) string { return strings.Repeat(fmt.Sprintf("<p>page %d</p>", i), 100*(1+i%7)) }
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscanf(r.URL.Path, "/p%d", &i)
		if i%2 == 0 {
			w.Header().Set("Content-Length", fmt.Sprint(len(page(i))))
		}
		io.WriteString(w, page(i))
	})
	f := newTest(t, func(o *Options) { o.MemThreshold = 16 << 10 })
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < 200; i += 4 {
				r, err := f.Fetch(context.Background(), fmt.Sprintf("%s/p%d", s.URL, i))
				if err != nil {
					errc <- err
					return
				}
				got, err := io.ReadAll(r.Body.NewReader())
				m, inMem := r.Body.Bytes()
				if err != nil || string(got) != page(i) || inMem && !bytes.Equal(m, got) {
					errc <- fmt.Errorf("p%d: %d bytes, %v; want %d", i, len(got), err, len(page(i)))
				}
				r.Close()
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}
