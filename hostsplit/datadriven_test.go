package hostsplit

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// fakeClock only moves when the test says so; its After never fires, so
// the splitter's own age loop stays asleep and the test drives flushAged.
// The senders read it too (a peer's failure time), hence the lock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

func (c *fakeClock) After(time.Duration) <-chan time.Time { return make(chan time.Time) }

// TestBatchingDataDriven runs testdata/batching: routing, cache
// suppression, size/byte/age flushes and the spool's contents, on node "a"
// of {a, b, c} whose peers never answer.
func TestBatchingDataDriven(t *testing.T) {
	var s *Splitter
	var sink *memSink
	var clock *fakeClock
	defer func() {
		if s != nil {
			_ = s.Close()
		}
	}()
	datadriven.RunTest(t, "testdata/batching", func(t *testing.T, d *datadriven.TestData) string {
		ctx := context.Background()
		switch d.Cmd {
		case "new":
			if s != nil {
				_ = s.Close()
			}
			o := Options{
				Self: "a", Members: []Member{{ID: "a"}, {ID: "b", Addr: "127.0.0.1:1"}, {ID: "c", Addr: "127.0.0.1:1"}},
				DataDir: t.TempDir(), Insecure: true, Logger: slog.New(slog.DiscardHandler), Codec: CodecFrontS2,
			}
			clock = &fakeClock{now: time.Unix(0, 0)}
			o.Clock = clock
			sink = newMemSink()
			o.Local = sink
			if d.HasArg("max-urls") {
				d.ScanArgs(t, "max-urls", &o.BatchMaxURLs)
			}
			if d.HasArg("max-bytes") {
				d.ScanArgs(t, "max-bytes", &o.BatchMaxBytes)
			}
			o.BatchMaxAge = time.Second
			if d.HasArg("cache") {
				o.PeerCache = func() Cache { return mapCache{} }
			}
			var err error
			if s, err = New(o); err != nil {
				return err.Error()
			}
			return ""
		case "route":
			urls := strings.Fields(d.Input)
			var out strings.Builder
			for _, u := range urls {
				o, err := s.Ownership().Ring().OwnerOfURL(u)
				if err != nil {
					o = "(none)"
				}
				fmt.Fprintf(&out, "%s %s\n", o, u)
			}
			if err := s.Route(ctx, urls); err != nil {
				fmt.Fprintf(&out, "error: %v\n", err)
			}
			return out.String() + dumpSpool(t, s, sink)
		case "advance":
			var ds string
			d.ScanArgs(t, "by", &ds)
			dur, err := time.ParseDuration(ds)
			if err != nil {
				t.Fatal(err)
			}
			s.flushAged(clock.advance(dur))
			return dumpSpool(t, s, sink)
		case "flush":
			if err := s.Flush(ctx); err != nil {
				return err.Error()
			}
			return dumpSpool(t, s, sink)
		case "stats":
			st := s.Stats()
			return fmt.Sprintf("local %d remote %d suppressed %d sent %d batches %d dups %d too-long %d reduction %.3f local-share %.3f\n",
				st.DiscoveredLocal, st.DiscoveredRemote, st.Total.Suppressed, st.Total.SentURLs, st.Total.SentBatches,
				st.Total.BatchDups, st.Total.TooLong, st.TrafficReduction(), st.LocalShare())
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

// dumpSpool prints the local sink, every spooled batch (decoded) and the
// buffers.
func dumpSpool(t *testing.T, s *Splitter, sink *memSink) string {
	var out strings.Builder
	fmt.Fprintf(&out, "local: %v\n", keys(sink.snapshot()))
	for _, p := range s.tr.order {
		p.q.mu.Lock()
		seqs := make([]uint64, 0, len(p.q.pending))
		for q := range p.q.pending {
			seqs = append(seqs, q)
		}
		p.q.mu.Unlock()
		slices.Sort(seqs)
		for _, q := range seqs {
			_, n, enc, err := s.spool.st.getBatch(p.id, q)
			if err != nil {
				t.Fatal(err)
			}
			urls, err := DecodeBatch(enc, Limits{})
			if err != nil || len(urls) != n {
				t.Fatalf("batch %d: %d URLs, %v", q, n, err)
			}
			fmt.Fprintf(&out, "spool %s #%d: %v\n", p.id, q, urls)
		}
		p.b.mu.Lock()
		if len(p.b.buf) > 0 {
			fmt.Fprintf(&out, "buffer %s: %v\n", p.id, p.b.buf)
		}
		p.b.mu.Unlock()
	}
	return out.String()
}
