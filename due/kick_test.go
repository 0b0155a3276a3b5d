package due

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/goleak"

	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// Kick merges a non-empty buffer without waiting for FlushInterval (an hour
// here), and a kick of an empty buffer merges nothing.
func TestKickMergesSoon(t *testing.T) {
	defer goleak.VerifyNone(t)
	sink := &frontierSink{}
	d := openT(t, vfs.NewMem(), sink, func(o *Options) { o.FlushInterval = time.Hour })
	defer d.Close()
	d.Kick() // of an empty buffer: no merge
	want := []string{"http://a.test/1", "http://a.test/2"}
	for round, u := range want {
		if err := d.Add(fingerprint.URL(u), u); err != nil {
			t.Fatal(err)
		}
		d.Kick()
		waitFor(t, func() bool { return len(sink.got()) == round+1 }, "the kicked merge")
	}
	checkStream(t, sink.got(), want)
	if m := d.Stats().Merges; m != 2 {
		t.Errorf("%d merges, want 2 (one per kick of a non-empty buffer)", m)
	}
}

// Kicks are paced: after a merge that took t, the next kicked merge waits
// until kickDuty·t has passed, however often the consumer kicks.
func TestKickPaced(t *testing.T) {
	defer goleak.VerifyNone(t)
	sink := &frontierSink{}
	now := time.Unix(0, 0)
	var clock = func() time.Time { return now }
	d := openT(t, vfs.NewMem(), sink, func(o *Options) { o.FlushInterval = time.Hour; o.Now = clock })
	defer d.Close()
	// The loop owns its pacing state; set it as if a merge that took an hour
	// had just ended.
	d.lastMergeEnd, d.lastMergeDur = now, time.Hour
	if err := d.Add(fingerprint.URL("http://a.test/"), "http://a.test/"); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		d.Kick()
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(sink.got()); n != 0 {
		t.Fatalf("a kick merged within the pacing interval (%d URLs delivered)", n)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
