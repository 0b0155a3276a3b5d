package hostsplit

import (
	"errors"
	"log/slog"
	"os"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestClusterKillNine once failed with "spool … no epoch: the spool lost
// its first write": a node killed while creating its spool, after pebble
// made the database and before the epoch was written, left a spool that
// every later open refused. Such a spool holds nothing: it must read as no
// spool at all (no problem) and open as a new one.
func TestSpoolCreationKilledBeforeEpoch(t *testing.T) {
	dir := t.TempDir() + "/spool"
	// What a node killed inside the old openStore left: the database
	// pebble created, without the epoch.
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := InspectSpool(dir, Limits{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Exists || len(rep.Problems) != 0 {
		t.Fatalf("half-made spool: Exists %v, problems %q; want read as no spool, no problem", rep.Exists, rep.Problems)
	}
	st, err := openStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	epoch := st.epoch
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	rep, err = InspectSpool(dir, Limits{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Exists || len(rep.Problems) != 0 || epoch == 0 || rep.Mark.Epoch != epoch {
		t.Fatalf("reopened: Exists %v, problems %q, epoch %d (mark %d): want a spool with its epoch", rep.Exists, rep.Problems, epoch, rep.Mark.Epoch)
	}
}

// A spool is created atomically: a node dying between the database's
// creation and its epoch's write (createHook) leaves no spool, and the
// next open creates a whole one.
func TestSpoolCreationIsAtomic(t *testing.T) {
	dir := t.TempDir() + "/spool"
	killed := errors.New("killed")
	createHook = func() error { return killed }
	_, err := openStore(dir, slog.New(slog.DiscardHandler))
	createHook = nil
	if !errors.Is(err, killed) {
		t.Fatalf("openStore: %v, want the hook's error", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a creation cut short left %s (%v): want no spool", dir, err)
	}
	rep, err := InspectSpool(dir, Limits{}, true)
	if err != nil || rep.Exists || len(rep.Problems) != 0 {
		t.Fatalf("InspectSpool: %+v, %v: want no spool, no problem", rep, err)
	}
	st, err := openStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	epoch := st.epoch
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	if rep, err = InspectSpool(dir, Limits{}, true); err != nil || !rep.Exists || len(rep.Problems) != 0 || rep.Mark.Epoch != epoch || epoch == 0 {
		t.Fatalf("after a whole creation: %+v, %v, epoch %d", rep, err, epoch)
	}
	if _, err := os.Stat(dir + ".new"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary spool %s.new is left (%v)", dir, err)
	}
}
