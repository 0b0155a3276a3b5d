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

func (s *printSink) Deliver(seq uint64, urls []string) error {
	if seq <= s.last {
		return nil // a re-delivery after a crash
	}
	s.last = seq
	fmt.Println(seq, urls)
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
	if err := d.Flush(); err != nil {
		panic(err)
	}
	d.Add(fingerprint.URL("http://b.test/"), "http://b.test/")
	d.Add(fingerprint.URL("http://c.test/"), "http://c.test/")
	if err := d.Flush(); err != nil {
		panic(err)
	}
	st := d.Stats()
	fmt.Println(st.EntriesOnDisk, st.DroppedInBuffer, st.DroppedOnDisk)
	// Output:
	// 1 [http://a.test/ http://b.test/]
	// 2 [http://c.test/]
	// 3 1 1
}
