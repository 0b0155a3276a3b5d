package warc_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
	"go.uber.org/goleak"
)

// Close during concurrent writes: every write either fails with ErrClosed
// or returns a Location that holds its record in a valid file; the writer
// goroutine is gone after Close.
func TestCloseDuringWrites(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	w := newWriter(t, warc.Options{Dir: dir, Queue: 2, MaxSize: 8 << 10})
	var mu sync.Mutex
	var locs []warc.Location
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				loc, err := w.WriteFetch(warc.Fetch{URL: fmt.Sprintf("http://c.test/%d/%d", g, i), StatusCode: 200, Body: section([]byte(fmt.Sprintf("%d-%d", g, i)))})
				if errors.Is(err, warc.ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				locs = append(locs, loc)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	got := map[string]bool{}
	recs, err := warctest.ValidateAll(files(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		got[r.ID] = true
	}
	for _, l := range locs {
		if !got[l.RecordID] {
			t.Errorf("Location %+v: record not in the files", l)
		}
	}
	if len(locs) == 0 {
		t.Fatal("no write succeeded")
	}
}

// A crash inside a file's close, after the WARC file's rename and before
// its index was sorted into place, leaves NAME.cdxj.open beside a closed
// NAME.warc.gz: the next open indexes the file again and removes it.
func TestRepairOrphanIndex(t *testing.T) {
	dir := t.TempDir()
	w, _ := writeMany(t, dir, 3)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	idx, _ := filepath.Glob(filepath.Join(dir, "*.cdxj"))
	if len(idx) != 1 {
		t.Fatalf("indexes %v", idx)
	}
	want, err := os.ReadFile(idx[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(idx[0], idx[0]+".open"); err != nil {
		t.Fatal(err)
	}
	w2 := newWriter(t, warc.Options{Dir: dir, NodeID: "nt"})
	if st := w2.Stats(); st.Repaired != 1 {
		t.Errorf("stats %+v, want 1 repaired", st)
	}
	if open, _ := filepath.Glob(filepath.Join(dir, "*.open")); len(open) > 1 {
		t.Errorf("left open: %v", open) // the new writer's own file only
	}
	got, err := os.ReadFile(idx[0])
	if err != nil || string(got) != string(want) {
		t.Errorf("rebuilt index differs (%v):\n%s\nwant:\n%s", err, got, want)
	}
}
