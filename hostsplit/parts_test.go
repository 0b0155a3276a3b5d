package hostsplit

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
)

// The parts of a Splitter tested alone: the view transitions of the
// ownership ring are pure, and the spool's queues survive a reopen.

func testView(epoch uint64, ids ...NodeID) View {
	v := View{Epoch: epoch}
	for _, id := range ids {
		v.Members = append(v.Members, Member{ID: id, Addr: "127.0.0.1:1"})
	}
	return v
}

func TestViewStateNext(t *testing.T) {
	ring, _ := NewRing([]NodeID{"a", "b"}, false)
	cur := &viewState{v: testView(2, "a", "b"), ring: ring, prev: []NodeID{"a"}, removed: []NodeID{"x"}}
	for _, tc := range []struct {
		name    string
		v       View
		noop    bool
		wantErr error
	}{
		{"same view", testView(2, "a", "b"), true, nil},
		{"older", testView(1, "a"), false, ErrStaleView},
		{"same epoch, other members", testView(2, "a"), false, ErrStaleView},
		{"removed id", testView(3, "a", "x"), false, ErrRemovedID},
		{"newer", testView(3, "a", "b", "c"), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nvs, err := cur.next(tc.v, false)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if (nvs == nil) != tc.noop {
				t.Fatalf("next = %v, no-op want %v", nvs, tc.noop)
			}
			if nvs == nil {
				return
			}
			if nvs.v.Epoch != tc.v.Epoch || !slices.Equal(nvs.prev, cur.v.IDs()) || !slices.Equal(nvs.removed, cur.removed) {
				t.Fatalf("next = %+v", nvs)
			}
			if got := nvs.ring.Members(); !slices.Equal(got, tc.v.IDs()) {
				t.Fatalf("ring members %v", got)
			}
		})
	}
}

func TestOwnershipRetireAndKnown(t *testing.T) {
	ring, _ := NewRing([]NodeID{"a", "c"}, false)
	var saved []*viewState
	o := newOwnership("a", &viewState{v: testView(3, "a", "c"), ring: ring, prev: []NodeID{"a", "b"}},
		func(vs *viewState) error { saved = append(saved, vs); return nil })
	if !o.Known("b") || o.Known("d") {
		t.Fatalf("before Retire: Known(b) %v, Known(d) %v", o.Known("b"), o.Known("d"))
	}
	o.Expect(testView(4, "a", "c", "d"))
	if !o.Known("d") {
		t.Fatal("an expected member is not known")
	}
	o.Unexpect()
	if err := o.Retire(); err != nil {
		t.Fatal(err)
	}
	if o.Known("b") || !slices.Equal(o.Removed(), []NodeID{"b"}) || len(saved) != 1 {
		t.Fatalf("after Retire: Known(b) %v, Removed %v, saved %d views", o.Known("b"), o.Removed(), len(saved))
	}
	if err := o.Retire(); err != nil || len(saved) != 1 {
		t.Fatalf("second Retire: %v, saved %d views (want no new one)", err, len(saved))
	}
}

func TestSpoolQueueSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	opts := Options{}
	opts.EnsureDefaults()
	open := func() (*Spool, *peer) {
		st, err := openStore(dir, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		sp := &Spool{opts: &opts, st: st}
		p := &peer{id: "b"}
		p.q.notify = make(chan struct{}, 1)
		if err := sp.openQueue(p); err != nil {
			t.Fatal(err)
		}
		return sp, p
	}
	sp, p := open()
	for _, urls := range [][]string{{"http://h1/", "http://h1/"}, {"http://h2/"}, {"http://h3/"}} {
		if err := sp.append(p, urls); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.st.batchDups.Load(); got != 1 {
		t.Errorf("batch duplicates %d, want 1", got)
	}
	if !sp.ackUpTo(p, 2) || sp.ackUpTo(p, 2) {
		t.Fatal("ackUpTo(2) new the first time only")
	}
	if err := sp.close(); err != nil {
		t.Fatal(err)
	}
	sp, p = open()
	defer sp.close()
	if p.q.lastSeq != 3 || p.q.acked != 2 || !slices.Equal(p.q.pendingSeqs(), []uint64{3}) || p.q.pendingURLs != 1 {
		t.Fatalf("reopened queue: last %d, acked %d, pending %v (%d URLs)", p.q.lastSeq, p.q.acked, p.q.pendingSeqs(), p.q.pendingURLs)
	}
	if urls, _, err := sp.ArchiveSize("b"); err != nil || urls != 2 {
		t.Fatalf("archive holds %d URLs (%v), want the 2 acknowledged", urls, err)
	}
}
