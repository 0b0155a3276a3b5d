package due

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// flakySink fails some deliveries (deterministically from its seed) and
// otherwise applies batches like the frontier.
type flakySink struct {
	frontierSink
	rng *rand.Rand
	// dead, when set and true, refuses every delivery: the crashed process
	// is gone. Without it a merge whose last file operation passed the
	// injector just before another goroutine's crash instant, but took
	// effect after the crash image, went on to deliver a batch the image
	// never committed; the restart then reused its seq and the frontier
	// ignored new URLs under it (1 run in about 3,000).
	dead *atomic.Bool
}

func (s *flakySink) Deliver(seq uint64, urls []Entry) error {
	s.mu.Lock()
	fail := s.rng.IntN(5) == 0
	dead := s.dead != nil && s.dead.Load()
	s.mu.Unlock()
	if dead {
		return errors.New("process crashed")
	}
	if fail {
		return errors.New("frontier busy")
	}
	return s.frontierSink.Deliver(seq, urls)
}

// crashInjector counts file-system operations; at operation `at` it takes a
// crash image of the file system (synced data, plus a random part of the
// unsynced data) and from then on fails every operation.
type crashInjector struct {
	mu       sync.Mutex
	mem      *vfs.MemFS
	at       int64
	ops      atomic.Int64
	dead     atomic.Bool
	image    *vfs.MemFS
	unsynced int
	rng      *rand.Rand
	op       errorfs.Op
	// acked counts the candidates the workload has seen acknowledged;
	// ackedAtCrash is read just before the crash image is taken (an Add
	// acknowledged later may have synced after the image).
	acked        atomic.Int64
	ackedAtCrash int64
}

func (c *crashInjector) String() string { return "crash" }

func (c *crashInjector) MaybeError(op errorfs.Op) error {
	if c.dead.Load() {
		return errorfs.ErrInjected
	}
	if c.ops.Add(1)-1 != c.at {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg := vfs.CrashCloneCfg{}
	if c.unsynced > 0 {
		cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: c.unsynced, RNG: c.rng}
	}
	// Dead before the image: an operation of another goroutine that
	// passed the check earlier but lands after the image starts is
	// followed by a delivery that sees dead and is refused.
	c.dead.Store(true)
	c.ackedAtCrash = c.acked.Load()
	c.image = c.mem.CrashClone(cfg)
	c.op = op
	return errorfs.ErrInjected
}

// crashWorkload offers cands to a DUE on fs from index `from`; it returns the
// index of the first candidate not acknowledged.
func crashWorkload(fs vfs.FS, sink Sink, cands []Entry, from int, flushEvery int, acked *atomic.Int64) (int, error) {
	d, err := Open("db", Options{FS: fs, Sink: sink, BufferEntries: 40, FlushInterval: -1,
		BlockEntries: 16, RunRatio: 2, MaxRuns: 3})
	if err != nil {
		return from, fmt.Errorf("open: %w", err)
	}
	i := from
	for ; i < len(cands); i++ {
		if err = d.AddBatch(cands[i : i+1]); err != nil {
			break
		}
		acked.Store(int64(i + 1))
		if i%flushEvery == flushEvery-1 {
			if err = d.Flush(); err != nil && errors.Is(err, ErrFailed) {
				i++ // acknowledged before the Flush failed
				break
			}
			err = nil
		}
	}
	for err == nil {
		err = d.Flush()
		if err != nil && !errors.Is(err, ErrFailed) {
			err = nil // a Sink error: retry
		} else if err == nil {
			break
		}
	}
	d.Close()
	return i, err
}

// TestCrashAtEveryOperation crashes (power loss: unsynced data partly lost)
// or fails (process error: page cache survives) at every file-system
// operation of a workload with several merges, restarts, resends what was
// not acknowledged, and compares the frontier's stream with the oracle.
func TestCrashAtEveryOperation(t *testing.T) {
	s := newStream(7)
	var cands []Entry
	var or oracle
	for range 300 {
		u := s.next()
		cands = append(cands, Entry{FP: fingerprint.URL(u), URL: u})
		or.add(u)
	}
	// A clean run counts the operations.
	probe := &crashInjector{mem: vfs.NewCrashableMem(), at: -1}
	sink := &flakySink{rng: rand.New(rand.NewPCG(1, 1))}
	if _, err := crashWorkload(errorfs.Wrap(probe.mem, probe), sink, cands, 0, 97, &probe.acked); err != nil {
		t.Fatal(err)
	}
	checkStream(t, sink.got(), or.want)
	total := probe.ops.Load()
	t.Logf("%d operations per run", total)
	step := int64(1)
	if testing.Short() {
		step = 7
	}
	kinds := map[errorfs.OpKind]int{}
	for at := int64(0); at < total; at += step {
		for _, powerLoss := range []bool{true, false} {
			rng := rand.New(rand.NewPCG(uint64(at), 3))
			inj := &crashInjector{mem: vfs.NewCrashableMem(), at: at, rng: rng, unsynced: rng.IntN(3) * 50}
			sink := &flakySink{rng: rand.New(rand.NewPCG(uint64(at), 4)), dead: &inj.dead}
			next, err := crashWorkload(errorfs.Wrap(inj.mem, inj), sink, cands, 0, 97, &inj.acked)
			sink.dead = nil
			if err == nil {
				continue // the crash point was in Close
			}
			kinds[inj.op.Kind]++
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
			got := sink.got()
			if len(got) != len(or.want) {
				t.Fatalf("crash at op %d (%+v, power loss %v): %d URLs delivered, want %d", at, inj.op, powerLoss, len(got), len(or.want))
			}
			for i := range got {
				if got[i] != or.want[i] {
					t.Fatalf("crash at op %d (%+v, power loss %v, resumed at %d): emitted[%d] = %q, oracle %q", at, inj.op, powerLoss, next, i, got[i], or.want[i])
				}
			}
		}
	}
	t.Logf("crashed at operation kinds %v", kinds)
}

// TestKill9 re-executes the test binary as a child that adds candidates to
// a DUE on the real file system and reports each acknowledgement on stdout;
// the parent kills it (SIGKILL) at random moments, restarts it from the
// first unacknowledged candidate, and finally compares what the frontier
// applied with the oracle.
func TestKill9(t *testing.T) {
	if os.Getenv("DUE_KILL_CHILD") != "" {
		killChild()
		return
	}
	runKill9(t)
}

// TestCrashedSinkRefuses: once the injector has crashed, a delivery from
// the crashed process is refused, even one whose commit passed the
// injector before the crash instant (it may have landed after the image).
func TestCrashedSinkRefuses(t *testing.T) {
	inj := &crashInjector{mem: vfs.NewCrashableMem(), at: 1}
	sink := &flakySink{rng: rand.New(rand.NewPCG(2, 2)), dead: &inj.dead}
	if err := inj.MaybeError(errorfs.Op{Kind: errorfs.OpFileSync}); err != nil {
		t.Fatal(err)
	}
	if err := inj.MaybeError(errorfs.Op{Kind: errorfs.OpFileSync}); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("second op: %v, want the crash", err)
	}
	e := Entry{FP: fingerprint.URL("http://a.test/"), URL: "http://a.test/"}
	for range 10 { // flakySink fails 1 in 5 anyway: all must fail here
		if err := sink.Deliver(1, []Entry{e}); err == nil {
			t.Fatal("a crashed process delivered a batch")
		}
	}
	if len(sink.gotEntries()) != 0 {
		t.Fatal("batch applied")
	}
}
