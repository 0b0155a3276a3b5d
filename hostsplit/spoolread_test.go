package hostsplit

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// ReadSpool lists exactly the batches not acknowledged: the acknowledged
// ones (moved to the archive) and the other keys are not URLs to deliver.
func TestReadSpoolPendingOnly(t *testing.T) {
	dir := t.TempDir()
	fillSpool(t, dir, 5, 2)
	var seqs []uint64
	var urls []string
	err := ReadSpool(dir, Limits{}, func(b SpooledBatch) error {
		if b.Peer != "b" || b.Kind != KindURLs {
			t.Errorf("batch %d: peer %q kind %d", b.Seq, b.Peer, b.Kind)
		}
		seqs = append(seqs, b.Seq)
		urls = append(urls, b.URLs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqs, []uint64{3, 4, 5}) {
		t.Errorf("batches %v, want 3 4 5", seqs)
	}
	var want []string
	for i := 3; i <= 5; i++ {
		for _, s := range []string{"x", "y", "z"} {
			want = append(want, fmt.Sprintf("http://b.test/%d/%s", i, s))
		}
	}
	if !slices.Equal(urls, want) {
		t.Errorf("URLs %v, want %v", urls, want)
	}
	calls := 0
	if err := ReadSpool(filepath.Join(dir, "none"), Limits{}, func(SpooledBatch) error { calls++; return nil }); err != nil || calls != 0 {
		t.Errorf("no spool: %d calls, %v", calls, err)
	}
}
