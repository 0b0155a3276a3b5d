package due

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestInspect reads a populated DUE's MANIFEST without opening it: one
// pending batch after the delivered ones, the runs' entries; an empty or
// missing directory does not exist; a damaged or missing MANIFEST is
// ErrCorrupt.
func TestInspect(t *testing.T) {
	fs := populated(t)
	info, err := Inspect(fs, "db")
	if err != nil {
		t.Fatal(err)
	}
	if !info.Exists || info.Pending != 1 || info.Delivered == 0 || info.LastCommitted() != info.Delivered+1 || info.Runs < 2 || info.Entries == 0 {
		t.Fatalf("Inspect = %+v", info)
	}
	// Open re-delivers the pending batch: LastDelivered reaches LastCommitted.
	d := openT(t, fs, &frontierSink{}, nil)
	if st := d.Stats(); st.LastDelivered != info.LastCommitted() || uint64(st.EntriesOnDisk) != info.Entries {
		t.Fatalf("after Open: %+v, Inspect said %+v", st, info)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	if info, err := Inspect(vfs.NewMem(), "nowhere"); err != nil || info.Exists {
		t.Fatalf("missing dir: %+v %v", info, err)
	}
	if err := fs.Remove("db/" + manifestName); err != nil {
		t.Fatal(err)
	}
	if _, err := Inspect(fs, "db"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("no MANIFEST: %v", err)
	}
	f, err := fs.Create("db/"+manifestName, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(manifestMagic + "garbage"))
	f.Close()
	if _, err := Inspect(fs, "db"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad MANIFEST: %v", err)
	}
}
