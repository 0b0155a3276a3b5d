package due_test

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// printSink stands in for the frontier: it would store the URLs and the seq
// in one transaction, ignoring any seq it has already applied.
type printSink struct{ last uint64 }

func (s *printSink) Deliver(seq uint64, batch []due.Entry) error {
	if seq <= s.last {
		return nil // a re-delivery after a crash
	}
	s.last = seq
	for _, e := range batch {
		fmt.Print(seq, " ", e.URL, " depth ", e.Depth, "\n")
	}
	return nil
}

func Example() {
	d, err := due.Open("crawl/due", due.Options{
		Sink:          &printSink{},
		FS:            vfs.NewMem(), // omit for the OS file system
		BufferEntries: 1 << 20,
		FlushInterval: -1, // merge only on Flush or a full buffer
	})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	for _, u := range []string{"http://a.test/", "http://b.test/", "http://a.test/"} {
		if err := d.Add(fingerprint.URL(u), u); err != nil {
			panic(err)
		}
	}
	// A URL fetched elsewhere: recorded as seen, never delivered.
	if err := d.AddBatch([]due.Entry{{FP: fingerprint.URL("http://d.test/"), URL: "http://d.test/", SeenOnly: true}}); err != nil {
		panic(err)
	}
	if err := d.Flush(); err != nil {
		panic(err)
	}
	d.Add(fingerprint.URL("http://b.test/"), "http://b.test/")
	d.AddBatch([]due.Entry{
		{FP: fingerprint.URL("http://c.test/"), URL: "http://c.test/", Depth: 2},
		{FP: fingerprint.URL("http://d.test/"), URL: "http://d.test/", Depth: 2},
	})
	if err := d.Flush(); err != nil {
		panic(err)
	}
	st := d.Stats()
	fmt.Println(st.EntriesOnDisk, st.DroppedInBuffer, st.DroppedOnDisk)
	// Output:
	// 1 http://a.test/ depth 0
	// 1 http://b.test/ depth 0
	// 2 http://c.test/ depth 2
	// 4 1 2
}
