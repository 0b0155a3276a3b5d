package due

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
	"go.uber.org/goleak"
)

// frontierSink models the frontier side of the hand-off: it applies a batch
// only if its seq is above the last applied one.
type frontierSink struct {
	mu      sync.Mutex
	last    uint64
	urls    []string
	entries []Entry
	calls   int
	ignored int
	fail    error // returned (and batch not applied) while set
}

func (s *frontierSink) Deliver(seq uint64, batch []Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail != nil {
		return s.fail
	}
	if seq <= s.last {
		s.ignored++
		return nil
	}
	s.last = seq
	for _, e := range batch {
		if e.SeenOnly {
			return fmt.Errorf("seen-only entry %q delivered", e.URL)
		}
		s.urls = append(s.urls, e.URL)
	}
	s.entries = append(s.entries, batch...)
	return nil
}

func (s *frontierSink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.urls)
}

// stream produces candidate URLs with a realistic shape: a few candidates
// per distinct URL, mostly recent ones (locality), some old ones.
type stream struct {
	rng  *rand.Rand
	n    int // distinct URLs so far
	host int
}

func newStream(seed uint64) *stream {
	return &stream{rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}
}

func urlOf(i int) string { return fmt.Sprintf("http://h%05d.sim.test/p/%d", i%997, i) }

func (s *stream) next() string {
	r := s.rng.IntN(100)
	switch {
	case s.n == 0 || r < 20:
		s.n++
		return urlOf(s.n - 1)
	case r < 80:
		return urlOf(s.n - 1 - s.rng.IntN(min(s.n, 200)))
	default:
		return urlOf(s.rng.IntN(s.n))
	}
}

// oracle tracks the expected emitted stream: first occurrences in order.
type oracle struct {
	seen map[string]bool
	want []string
}

func (o *oracle) add(u string) {
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	if !o.seen[u] {
		o.seen[u] = true
		o.want = append(o.want, u)
	}
}

func openT(t testing.TB, fs vfs.FS, sink Sink, mod func(*Options)) *DUE {
	t.Helper()
	o := Options{FS: fs, Sink: sink, BufferEntries: 500, FlushInterval: -1, BlockEntries: 64}
	if mod != nil {
		mod(&o)
	}
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func checkStream(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("emitted %d URLs, oracle %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("emitted[%d] = %q, oracle %q", i, got[i], want[i])
		}
	}
}

func TestExactAgainstOracle(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncNone} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := vfs.NewMem()
			sink := &frontierSink{}
			d := openT(t, fs, sink, func(o *Options) { o.Sync = mode; o.RunRatio = 2; o.MaxRuns = 4 })
			var or oracle
			s := newStream(1)
			for i := 0; i < 60000; i++ {
				u := s.next()
				or.add(u)
				if err := d.Add(fingerprint.URL(u), u); err != nil {
					t.Fatal(err)
				}
				if i%7919 == 0 {
					if err := d.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			checkStream(t, sink.got(), or.want)
			st := d.Stats()
			if st.EntriesOnDisk != uint64(len(or.want)) || st.Emitted != uint64(len(or.want)) {
				t.Fatalf("stats %+v, want %d on disk", st, len(or.want))
			}
			if st.Runs > 4 || st.Merges < 10 {
				t.Fatalf("runs %d merges %d", st.Runs, st.Merges)
			}
			if sum := st.DroppedByCache + st.DroppedInBuffer + st.DroppedOnDisk + st.Emitted; sum != st.Added {
				t.Fatalf("counters do not add up: %+v", st)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			// Reopen: everything is seen, nothing new is emitted.
			d = openT(t, fs, sink, nil)
			for _, u := range or.want[:1000] {
				if err := d.Add(fingerprint.URL(u), u); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Add(fingerprint.URL("http://new.test/"), "http://new.test/"); err != nil {
				t.Fatal(err)
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			checkStream(t, sink.got(), append(or.want, "http://new.test/"))
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConcurrentAdders(t *testing.T) {
	defer goleak.VerifyNone(t)
	fs := vfs.NewMem()
	sink := &frontierSink{}
	d := openT(t, fs, sink, func(o *Options) { o.FlushInterval = 0 })
	const workers, per = 4, 5000
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newStream(uint64(w % 2)) // two workers share each stream
			for i := 0; i < per; i++ {
				u := s.next()
				if err := d.Add(fingerprint.URL(u), u); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for w := 0; w < 2; w++ {
		s := newStream(uint64(w))
		for i := 0; i < per; i++ {
			want[s.next()] = true
		}
	}
	got := sink.got()
	seen := map[string]bool{}
	for _, u := range got {
		if seen[u] {
			t.Fatalf("%q emitted twice", u)
		}
		seen[u] = true
		if !want[u] {
			t.Fatalf("%q was never added", u)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("emitted %d distinct URLs, want %d", len(seen), len(want))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

type setCache map[uint64]bool

func (c setCache) Seen(fp uint64) bool { hit := c[fp]; c[fp] = true; return hit }

func TestFrontCacheAndDeliveryRetry(t *testing.T) {
	fs := vfs.NewMem()
	sink := &frontierSink{fail: errors.New("frontier down")}
	d := openT(t, fs, sink, func(o *Options) { o.FrontCache = setCache{} })
	for _, u := range []string{"http://a.test/", "http://b.test/", "http://a.test/"} {
		if err := d.Add(fingerprint.URL(u), u); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err == nil {
		t.Fatal("Flush hid the Sink error")
	}
	if st := d.Stats(); st.DroppedByCache != 1 || st.PendingBatches != 1 || st.DeliverErrors != 1 {
		t.Fatalf("stats %+v", st)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	sink.fail = nil
	d = openT(t, fs, sink, nil) // delivers the pending batch on Open
	checkStream(t, sink.got(), []string{"http://a.test/", "http://b.test/"})
	if st := d.Stats(); st.PendingBatches != 0 || st.LastDelivered != 1 {
		t.Fatalf("stats %+v", st)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{BufferEntries: -1, Sync: 9, BlockEntries: 1 << 20, RunRatio: -1}
	err := o.Validate()
	for _, want := range []string{"BufferEntries", "Sink", "Sync", "BlockEntries", "RunRatio"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want mention of %s", err, want)
		}
	}
	if _, err := Open("x", Options{FS: vfs.NewMem()}); err == nil {
		t.Fatal("Open without Sink succeeded")
	}
}

// The merger goroutine merges on its own every FlushInterval, so a slow
// crawl makes progress without Flush; Close waits for the goroutine.
func TestFlushIntervalMerges(t *testing.T) {
	defer goleak.VerifyNone(t)
	sink := &frontierSink{}
	d := openT(t, vfs.NewMem(), sink, func(o *Options) { o.FlushInterval = 5 * time.Millisecond })
	want := []string{"http://a.test/1", "http://a.test/2", "http://b.test/"}
	for _, u := range want {
		if err := d.Add(fingerprint.URL(u), u); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(sink.got()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	checkStream(t, sink.got(), want)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	if err := d.Add(1, "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close = %v", err)
	}
}

func TestSecondOpenRefused(t *testing.T) {
	fs := vfs.NewMem()
	d := openT(t, fs, &frontierSink{}, nil)
	if _, err := Open("db", Options{FS: fs, Sink: &frontierSink{}}); err == nil {
		t.Fatal("a second Open of the same directory succeeded")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openT(t, fs, &frontierSink{}, nil)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// The emitted stream must not depend on the configuration: buffer and block
// sizes, tiering and sync mode change only when and how work is done.
func TestConfigurationsAgree(t *testing.T) {
	var or oracle
	s := newStream(3)
	var cands []string
	for range 3000 {
		u := s.next()
		cands = append(cands, u)
		or.add(u)
	}
	for _, c := range []Options{
		{BufferEntries: 1, BlockEntries: 1, RunRatio: 1, MaxRuns: 1},
		{BufferEntries: 7, BlockEntries: 3, RunRatio: 1, MaxRuns: 30},
		{BufferEntries: 100, BlockEntries: 2, RunRatio: 100, Sync: SyncWrite},
		{BufferEntries: 1 << 20, BlockEntries: maxBlockEntries},
	} {
		t.Run(fmt.Sprintf("%d-%d-%d-%d", c.BufferEntries, c.BlockEntries, c.RunRatio, c.MaxRuns), func(t *testing.T) {
			fs := vfs.NewMem()
			sink := &frontierSink{}
			d := openT(t, fs, sink, func(o *Options) {
				o.BufferEntries, o.BlockEntries, o.RunRatio, o.MaxRuns, o.Sync = c.BufferEntries, c.BlockEntries, c.RunRatio, c.MaxRuns, c.Sync
			})
			for i, u := range cands {
				if err := d.Add(fingerprint.URL(u), u); err != nil {
					t.Fatal(err)
				}
				if i == len(cands)/2 { // restart half-way
					if err := d.Close(); err != nil {
						t.Fatal(err)
					}
					d = openT(t, fs, sink, func(o *Options) {
						o.BufferEntries, o.BlockEntries, o.RunRatio, o.MaxRuns, o.Sync = c.BufferEntries, c.BlockEntries, c.RunRatio, c.MaxRuns, c.Sync
					})
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := d.Verify(); err != nil {
				t.Fatal(err)
			}
			if st := d.Stats(); c.MaxRuns > 0 && st.Runs > c.MaxRuns {
				t.Fatalf("%d runs, MaxRuns %d", st.Runs, c.MaxRuns)
			}
			checkStream(t, sink.got(), or.want)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
