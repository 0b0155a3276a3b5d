package due

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// entryOracle is the expected delivered stream when candidates carry depths
// and seen-only flags: the first offer of a URL decides; a seen-only first
// offer is recorded but never delivered, and hides every later offer.
type entryOracle struct {
	seen map[string]bool
	want []Entry
}

func (o *entryOracle) add(e Entry) {
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	if o.seen[e.URL] {
		return
	}
	o.seen[e.URL] = true
	if !e.SeenOnly {
		o.want = append(o.want, e)
	}
}

// mixedCandidates draws n candidates from the URL stream; about one in
// seenOnlyIn is seen-only, and depths are random (up to the uint16 limit).
func mixedCandidates(seed uint64, n, seenOnlyIn int) ([]Entry, *entryOracle) {
	s := newStream(seed)
	rng := rand.New(rand.NewPCG(seed, 77))
	or := &entryOracle{}
	cands := make([]Entry, 0, n)
	for range n {
		u := s.next()
		e := Entry{FP: fingerprint.URL(u), URL: u, Depth: uint16(rng.IntN(20)), SeenOnly: rng.IntN(seenOnlyIn) == 0}
		if rng.IntN(100) == 0 {
			e.Depth = 65535
		}
		cands = append(cands, e)
		or.add(e)
	}
	return cands, or
}

func checkEntries(t *testing.T, what string, got, want []Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: delivered %d entries, oracle %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].URL != want[i].URL || got[i].Depth != want[i].Depth || got[i].FP != want[i].FP || got[i].SeenOnly {
			t.Fatalf("%s: delivered[%d] = %+v, oracle %+v", what, i, got[i], want[i])
		}
	}
}

func (s *frontierSink) gotEntries() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.entries...)
}

// TestSeenOnlyAndDepthExact offers a stream with random depths and seen-only
// flags across many merges and a reopen: exactly the URLs whose first offer
// was normal are delivered, once, in arrival order, with that offer's depth;
// seen-only ones are on disk and make every later offer a duplicate.
func TestSeenOnlyAndDepthExact(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncNone} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := vfs.NewMem()
			sink := &frontierSink{}
			d := openT(t, fs, sink, func(o *Options) { o.Sync = mode; o.RunRatio = 2; o.MaxRuns = 4 })
			cands, or := mixedCandidates(3, 40000, 4)
			for i := 0; i < len(cands); i += 1 + i%5 {
				j := min(len(cands), i+1+i%5)
				if err := d.AddBatch(cands[i:j]); err != nil {
					t.Fatal(err)
				}
				if i%6007 == 0 {
					if err := d.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			checkEntries(t, "first run", sink.gotEntries(), or.want)
			st := d.Stats()
			distinct := uint64(len(or.seen))
			if st.EntriesOnDisk != distinct || st.Emitted != uint64(len(or.want)) || st.SeenOnly != distinct-uint64(len(or.want)) {
				t.Fatalf("stats %+v, want %d on disk, %d emitted", st, distinct, len(or.want))
			}
			if st.SeenOnly == 0 {
				t.Fatal("no seen-only entry in the stream")
			}
			if sum := st.DroppedByCache + st.DroppedInBuffer + st.DroppedOnDisk + st.Emitted + st.SeenOnly; sum != st.Added {
				t.Fatalf("counters do not add up: %+v", st)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			// Reopen: every URL, seen-only or not, is a duplicate now, as
			// normal or seen-only entry; a new seen-only URL is not
			// delivered and a later normal offer of it is a duplicate.
			d = openT(t, fs, sink, nil)
			var again []Entry
			for u := range or.seen {
				again = append(again, Entry{FP: fingerprint.URL(u), URL: u, Depth: 1, SeenOnly: len(again)%2 == 0})
			}
			news := Entry{FP: fingerprint.URL("http://new.test/seen"), URL: "http://new.test/seen", SeenOnly: true}
			newn := Entry{FP: fingerprint.URL("http://new.test/n"), URL: "http://new.test/n", Depth: 9}
			if err := d.AddBatch(append(again, news, newn)); err != nil {
				t.Fatal(err)
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			news.SeenOnly = false
			if err := d.AddBatch([]Entry{news}); err != nil {
				t.Fatal(err)
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			checkEntries(t, "after reopen", sink.gotEntries(), append(or.want, newn))
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSeenOnlyBatchOfOnlySeenOnly: a merge whose new fingerprints are all
// seen-only writes no batch and uses no sequence number.
func TestSeenOnlyBatchOfOnlySeenOnly(t *testing.T) {
	sink := &frontierSink{}
	d := openT(t, vfs.NewMem(), sink, nil)
	defer d.Close()
	for i := range 3 {
		u := fmt.Sprintf("http://a.test/%d", i)
		if err := d.AddBatch([]Entry{{FP: fingerprint.URL(u), URL: u, SeenOnly: true}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); sink.calls != 0 || st.Batches != 0 || st.SeenOnly != 3 || st.EntriesOnDisk != 3 {
		t.Fatalf("calls %d, stats %+v", sink.calls, st)
	}
	if err := d.Add(fingerprint.URL("http://a.test/x"), "http://a.test/x"); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if sink.last != 1 {
		t.Fatalf("first delivered batch has seq %d, want 1", sink.last)
	}
}

// TestSeenOnlyCrashAtOperations is TestCrashAtEveryOperation with depths and
// seen-only entries: after a crash (power loss or process error) at any
// file-system operation and a restart that resends what was not
// acknowledged, the frontier has received exactly the oracle's entries.
func TestSeenOnlyCrashAtOperations(t *testing.T) {
	cands, or := mixedCandidates(11, 300, 3)
	probe := &crashInjector{mem: vfs.NewCrashableMem(), at: -1}
	sink := &flakySink{rng: rand.New(rand.NewPCG(1, 1))}
	if _, err := crashWorkload(errorfs.Wrap(probe.mem, probe), sink, cands, 0, 97, &probe.acked); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, "clean run", sink.gotEntries(), or.want)
	total := probe.ops.Load()
	step := int64(3)
	if testing.Short() {
		step = 11
	}
	crashes := 0
	for at := int64(0); at < total; at += step {
		for _, powerLoss := range []bool{true, false} {
			rng := rand.New(rand.NewPCG(uint64(at), 5))
			inj := &crashInjector{mem: vfs.NewCrashableMem(), at: at, rng: rng, unsynced: rng.IntN(3) * 50}
			sink := &flakySink{rng: rand.New(rand.NewPCG(uint64(at), 6)), dead: &inj.dead}
			next, err := crashWorkload(errorfs.Wrap(inj.mem, inj), sink, cands, 0, 97, &inj.acked)
			sink.dead = nil
			if err == nil {
				continue
			}
			crashes++
			fs := vfs.FS(inj.mem)
			if powerLoss {
				fs = inj.image
				next = int(inj.ackedAtCrash)
			} else {
				inj.dead.Store(false)
				inj.at = -1
				fs = errorfs.Wrap(inj.mem, inj)
			}
			if _, err := crashWorkload(fs, sink, cands, next, 97, new(atomic.Int64)); err != nil {
				t.Fatalf("crash at op %d (%+v, power loss %v): restart: %v", at, inj.op, powerLoss, err)
			}
			checkEntries(t, fmt.Sprintf("crash at op %d (%+v, power loss %v)", at, inj.op, powerLoss), sink.gotEntries(), or.want)
		}
	}
	if crashes == 0 {
		t.Fatal("no crash injected")
	}
	t.Logf("%d operations per run, %d crashes", total, crashes)
}
