package hostsplit

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestValidateReportsEveryProblem(t *testing.T) {
	o := Options{Self: "x", Members: []Member{{ID: "a"}, {ID: "a", Addr: "h:1"}}, BatchMaxURLs: 10000, Codec: 9}
	o.EnsureDefaults()
	err := o.Validate()
	if err == nil {
		t.Fatal("invalid options accepted")
	}
	for _, want := range []string{"duplicate member", "has no Addr", "Self", "DataDir", "Local", "BatchMaxURLs", "Codec", "ClientTLS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if _, err := New(o); err == nil {
		t.Error("New accepted invalid options")
	}
}

// isolated returns a splitter whose only peer is unreachable, so batches
// stay in its spool.
func isolated(t *testing.T, tweak func(*Options)) (*Splitter, *memSink) {
	t.Helper()
	sink := newMemSink()
	o := Options{
		Self: "a", Members: []Member{{ID: "a"}, {ID: "b", Addr: "127.0.0.1:1"}}, DataDir: t.TempDir(),
		Local: sink, Insecure: true, BatchMaxAge: -1, RetryMin: time.Second, RetryMax: time.Second,
		Logger: slog.New(slog.DiscardHandler),
	}
	if tweak != nil {
		tweak(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, sink
}

// remoteURLs returns n distinct URLs owned by b in the ring {a, b}.
func remoteURLs(t *testing.T, s *Splitter, n int, pad int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		u := "http://h" + strings.Repeat("x", pad) + string(rune('a'+i%26)) + "-" + itoa(i) + ".test/"
		if o, _ := s.Ownership().Ring().OwnerOfURL(u); o == "b" {
			out = append(out, u)
		}
	}
	return out
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestBatchingBySizeBytesAndFlush(t *testing.T) {
	ctx := context.Background()
	s, _ := isolated(t, func(o *Options) { o.BatchMaxURLs = 3; o.BatchMaxBytes = 200; o.Limits.MaxURLLen = 120 })
	urls := remoteURLs(t, s, 7, 0)
	if err := s.Route(ctx, urls); err != nil {
		t.Fatal(err)
	}
	st := s.Stats().Peers[0]
	if st.SpoolBatches != 2 || st.SpoolURLs != 6 || st.BufferedURLs != 1 {
		t.Fatalf("after 7 URLs with batches of 3: %+v", st)
	}
	// Duplicates inside one batch are sent once; an over-long URL is
	// dropped and counted.
	if err := s.Route(ctx, []string{urls[0], urls[0], "http://b-owned.test/" + strings.Repeat("z", 200)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st = s.Stats().Peers[0]
	if st.SpoolBatches != 3 || st.SpoolURLs != 8 || st.BufferedURLs != 0 || st.BatchDups != 1 {
		t.Fatalf("after flush: %+v", st)
	}
	if o, _ := s.Ownership().Ring().OwnerOfURL("http://b-owned.test/"); o == "b" && st.TooLong != 1 {
		t.Errorf("too long: %d", st.TooLong)
	}
	// The byte bound cuts batches too: 60-byte URLs, 200 bytes per batch.
	long := remoteURLs(t, s, 6, 40)
	before := st.SpoolBatches
	if err := s.Route(ctx, long); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Peers[0].SpoolBatches - before; got < 2 {
		t.Errorf("6 URLs of ~%d bytes made %d batches under a 200-byte bound", len(long[0]), got)
	}
}

func TestRouteAfterCloseAndCloseTwice(t *testing.T) {
	s, sink := isolated(t, nil)
	ctx := context.Background()
	local := "http://local.test/"
	for i := 0; ; i++ {
		if o, _ := s.Ownership().Ring().OwnerOfURL(local); o == "a" {
			break
		}
		local = "http://local" + itoa(i) + ".test/"
	}
	if err := s.Route(ctx, []string{local}); err != nil {
		t.Fatal(err)
	}
	if sink.snapshot()[local] != 1 {
		t.Fatal("local URL not delivered by Route")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Route(ctx, []string{local}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Route after Close: %v", err)
	}
}
