package hostsplit

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// fillSpool writes batches 1..n for peer b (each of 3 URLs), acknowledges
// 1..acked (moved to the archive), and closes the store.
func fillSpool(t *testing.T, dir string, n, acked int) SpoolMark {
	t.Helper()
	st, err := openStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		urls := []string{fmt.Sprintf("http://b.test/%d/x", i), fmt.Sprintf("http://b.test/%d/y", i), fmt.Sprintf("http://b.test/%d/z", i)}
		enc, err := EncodeBatch(nil, urls, CodecFront)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.putBatch("b", uint64(i), KindURLs, len(urls), enc); err != nil {
			t.Fatal(err)
		}
	}
	if acked > 0 {
		if err := st.ack("b", 1, uint64(acked)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.setApplied("c", 7, 3); err != nil {
		t.Fatal(err)
	}
	m := SpoolMark{Epoch: st.epoch, Last: map[NodeID]uint64{"b": uint64(n)}}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestInspectSpoolIntact(t *testing.T) {
	dir := t.TempDir()
	want := fillSpool(t, dir, 20, 12)
	rep, err := InspectSpool(dir, Limits{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Exists || len(rep.Problems) > 0 {
		t.Fatalf("intact spool: %+v", rep)
	}
	if ok, why := rep.Mark.Covers(want); !ok {
		t.Fatalf("mark %+v does not cover %+v: %s", rep.Mark, want, why)
	}
	if rep.PendingBatches != 8 || rep.PendingURLs != 24 || rep.ArchivedBatches != 12 || rep.ArchivedURLs != 36 {
		t.Fatalf("counts: %+v", rep)
	}
	missing, err := InspectSpool(filepath.Join(dir, "nope"), Limits{}, true)
	if err != nil || missing.Exists {
		t.Fatalf("missing spool: %+v, %v", missing, err)
	}
}

// A spool whose newest WAL lost its tail opens without a word (pebble
// takes a torn tail for a crash): only a mark taken before shows it.
func TestSpoolMarkShowsLostWrites(t *testing.T) {
	dir := t.TempDir()
	want := fillSpool(t, dir, 40, 0)
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(logs)
	if len(logs) == 0 {
		t.Fatal("no WAL in the spool")
	}
	wal := logs[len(logs)-1]
	fi, err := os.Stat(wal)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(wal, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	rep, err := InspectSpool(dir, Limits{}, true)
	if err != nil {
		t.Fatal(err)
	}
	ok, why := rep.Mark.Covers(want)
	if ok {
		t.Fatalf("a spool truncated to half covers its earlier mark: %+v", rep)
	}
	t.Logf("truncated WAL: problems %q; mark: %s", rep.Problems, why)
}

func TestRebuildSpoolKeepsWhatIsLeft(t *testing.T) {
	dir := t.TempDir()
	old := fillSpool(t, dir, 20, 12)
	rep, err := RebuildSpool(dir, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Opened || rep.ReadErr != nil || rep.Skipped != 0 {
		t.Fatalf("rebuild of an intact spool: %+v", rep)
	}
	if rep.Mark.Epoch == old.Epoch {
		t.Fatal("the rebuilt spool kept the old epoch: peers would drop its batches as resends")
	}
	if rep.PendingBatches != 8 || rep.ArchivedBatches != 12 || rep.Mark.Last["b"] != 8 {
		t.Fatalf("rebuilt: %+v", rep)
	}
	if _, err := os.Stat(dir + ".damaged"); err != nil {
		t.Fatalf("old spool not kept aside: %v", err)
	}
	st, err := openStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	last, pending, err := st.peerState("b")
	if err != nil || last != 8 || len(pending) != 8 || pending[1] != 3 || pending[8] != 3 {
		t.Fatalf("peer state after rebuild: last %d pending %v, %v", last, pending, err)
	}
	// Without a clean mark, an applied mark may be stale: it would refuse
	// the sender's next batch as a gap.
	if ep, seq, err := st.applied("c"); err != nil || ep != 0 || seq != 0 {
		t.Fatalf("applied mark kept: %d %d %v", ep, seq, err)
	}
	arch, err := st.archived("b", 0, 100)
	if err != nil || len(arch) != 12 {
		t.Fatalf("archive: %d batches, %v", len(arch), err)
	}
	urls, err := DecodeBatch(arch[0].enc, Limits{})
	if err != nil || urls[0] != "http://b.test/1/x" {
		t.Fatalf("first archived batch: %v, %v", urls, err)
	}
	// An acknowledgement of a new batch must not overwrite the archive.
	enc, _ := EncodeBatch(nil, []string{"http://b.test/new"}, CodecFront)
	if err := st.putBatch("b", 9, KindURLs, 1, enc); err != nil {
		t.Fatal(err)
	}
	if err := st.ack("b", 1, 9); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := st.archiveSize("b"); n != 36+24+1 {
		t.Fatalf("archive after acks: %d URLs, want %d", n, 36+24+1)
	}
}

// A spool that does not open at all is rebuilt empty under a new epoch.
func TestRebuildSpoolUnreadable(t *testing.T) {
	dir := t.TempDir()
	fillSpool(t, dir, 5, 0)
	ms, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	for _, m := range ms {
		if err := os.WriteFile(m, []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := InspectSpool(dir, Limits{}, false); err != nil || len(rep.Problems) == 0 {
		t.Fatalf("a spool with a scribbled MANIFEST passes: %+v, %v", rep, err)
	}
	rep, err := RebuildSpool(dir, Limits{}, nil)
	if err != nil || rep.Opened || rep.Mark.Epoch == 0 {
		t.Fatalf("rebuild: %+v, %v", rep, err)
	}
	if r, err := InspectSpool(dir, Limits{}, true); err != nil || len(r.Problems) > 0 {
		t.Fatalf("rebuilt spool: %+v, %v", r, err)
	}
}

func FuzzParseSpoolEntry(f *testing.F) {
	enc, _ := EncodeBatch(nil, []string{"http://a.test/", "http://a.test/b"}, CodecFront)
	f.Add(spoolKey("b", 3), append([]byte{2}, enc...))
	f.Add(peerKey('n', "b"), make([]byte, 8))
	f.Add([]byte("e"), make([]byte, 8))
	f.Add(archiveKey("x", 1), []byte{0, 2, 1, 0})
	f.Fuzz(func(t *testing.T, k, v []byte) {
		e, err := parseEntry(k, v, Limits{})
		if err != nil {
			return
		}
		if (e.tag == 's' || e.tag == 'a') && e.seq == 0 && len(k) < 11 {
			t.Fatalf("batch key %q accepted", k)
		}
	})
}

// A clean mark's applied marks are restored, the old spool's own where it
// is newer for the same epoch.
func TestRebuildSpoolRestoresCleanApplied(t *testing.T) {
	dir := t.TempDir()
	fillSpool(t, dir, 3, 0) // applied: c at (7, 3)
	prior := &SpoolMark{Clean: true, Applied: map[NodeID][2]uint64{"c": {7, 2}, "d": {9, 5}}}
	rep, err := RebuildSpool(dir, Limits{}, prior)
	if err != nil || rep.Applied != 2 {
		t.Fatalf("rebuild: %+v, %v", rep, err)
	}
	st, err := openStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	for id, want := range map[NodeID][2]uint64{"c": {7, 3}, "d": {9, 5}} {
		if ep, seq, err := st.applied(id); err != nil || ep != want[0] || seq != want[1] {
			t.Errorf("applied %s: (%d, %d) %v, want %v", id, ep, seq, err, want)
		}
	}
}
