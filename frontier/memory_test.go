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
// frontChunk per priority and hostChunk per active host, and at most
// MaxBackQueues active hosts.
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
	bound := 3*frontChunk + f.opts.MaxBackQueues*hostChunk
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
