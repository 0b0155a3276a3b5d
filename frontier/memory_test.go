package frontier

import (
	"errors"
	"fmt"
	"testing"
)

// inMemory counts the queue entries held in memory.
func (f *Frontier) inMemory() (entries, hosts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.mu.front {
		entries += len(f.mu.front[i].buf)
	}
	for _, h := range f.mu.sched.hosts {
		entries += len(h.back.buf)
	}
	return entries, len(f.mu.sched.hosts)
}

// Only queue heads live in memory, however many URLs are queued: at most
// frontChunk per priority, hostChunk per active host plus BackQueues ×
// hostChunk shared by few active hosts, and at most MaxBackQueues active
// hosts.
func TestOnlyHeadsInMemory(t *testing.T) {
	f := open(t, t.TempDir(), Options{Workers: 4})
	defer f.Close()
	const n, hosts = 60_000, 300
	var batch []Item
	for i := range n {
		host := fmt.Sprintf("h%d", i%hosts)
		batch = append(batch, Item{URL: fmt.Sprintf("http://%s/%d", host, i), Host: host, Priority: uint8(i % 3)})
		if len(batch) == 1000 {
			if err := f.AddBatch("t", uint64(i), batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	bound := 3*frontChunk + (f.opts.BackQueues+f.opts.MaxBackQueues)*hostChunk
	check := func(when string) {
		e, h := f.inMemory()
		if e > bound || h > f.opts.MaxBackQueues {
			t.Fatalf("%s: %d entries of %d hosts in memory, bound %d entries, %d hosts", when, e, h, bound, f.opts.MaxBackQueues)
		}
	}
	check("after enqueue")
	// Hold leases on a few hosts so the frontier activates more.
	var held []Lease
	for range 2 * f.opts.BackQueues {
		l, ok, err := f.TryNext()
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		held = append(held, l)
		check("while leasing")
	}
	for _, l := range held {
		if err := f.Done(l, Result{}); err != nil {
			t.Fatal(err)
		}
	}
	got := len(drain(t, f)) + len(held)
	check("after drain")
	if got != n {
		t.Fatalf("drained %d URLs, want %d", got, n)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{Workers: -1},
		{Factor: -1},
		{MinDelay: 2, MaxDelay: 1},
		{BackQueues: 10, MaxBackQueues: 5},
		{FailureBackoff: 10, MaxFailureBackoff: 5},
	} {
		o.EnsureDefaults()
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: Validate = %v, want ErrInvalidOptions", o, err)
		}
	}
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Errorf("DefaultOptions: %v", err)
	}
	if _, err := Open(t.TempDir(), Options{Factor: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Open with bad options: %v", err)
	}
	f := open(t, t.TempDir(), Options{})
	defer f.Close()
	for _, it := range []Item{{URL: "u"}, {Host: "h"}, {URL: "u", Host: "a\x00b"}} {
		if err := f.Add(it); !errors.Is(err, ErrInvalidItem) {
			t.Errorf("Add(%+v) = %v, want ErrInvalidItem", it, err)
		}
	}
	if err := f.AddBatch("", 1, nil); err == nil {
		t.Error("AddBatch with empty source accepted")
	}
}

// TestHostChunkShared: one active host reads its queue in big chunks (a
// narrow crawl opens fewer pebble iterators), BackQueues active hosts or
// more read hostChunk each, and a drained one-host crawl hands out every
// URL once, in order, across chunk boundaries and appends.
func TestHostChunkShared(t *testing.T) {
	f := open(t, t.TempDir(), Options{Workers: 4})
	defer f.Close()
	f.mu.Lock()
	one := f.hostChunkLocked()
	f.mu.Unlock()
	if want := min(hostChunk*f.opts.BackQueues, maxHostChunk); one != want || one <= hostChunk {
		t.Errorf("no active host: chunk %d, want %d", one, want)
	}
	const n = 700
	if err := f.Add(items("h", n)...); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; ; i++ {
		l, ok, err := f.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, l.URL)
		if e, _ := f.inMemory(); e > 3*frontChunk+one {
			t.Fatalf("%d entries in memory for one host", e)
		}
		if err := f.Done(l, Result{}); err != nil {
			t.Fatal(err)
		}
		if i == 300 { // appended behind a big head
			if err := f.Add(Item{URL: "http://h/late", Host: "h"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := append(items("h", n), Item{URL: "http://h/late"})
	if len(got) != len(want) {
		t.Fatalf("handed out %d URLs, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i].URL {
			t.Fatalf("lease %d: %s, want %s", i, got[i], want[i].URL)
		}
	}
	for i := range f.opts.BackQueues {
		if err := f.Add(items(fmt.Sprintf("x%d", i), 2)...); err != nil {
			t.Fatal(err)
		}
	}
	for range f.opts.BackQueues {
		if _, ok, err := f.TryNext(); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	f.mu.Lock()
	active, many := f.mu.sched.active(), f.hostChunkLocked()
	f.mu.Unlock()
	if active < f.opts.BackQueues || many != hostChunk {
		t.Errorf("%d active hosts: chunk %d, want %d", active, many, hostChunk)
	}
}
