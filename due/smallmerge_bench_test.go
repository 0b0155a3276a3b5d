package due

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// BenchmarkSmallMerge is the DUE of a narrow crawl: the frontier starves and
// kicks a merge of the few URLs found since the last one, many times a
// second, with the crawler's default buffer size (BufferEntries 2^20). One
// op = add 32 new URLs and merge them. The in-memory FS keeps fsync out of
// the figure: what is left is the merge's own CPU, which a full-size buffer
// allocated per freeze dominated.
func BenchmarkSmallMerge(b *testing.B) {
	sink := &frontierSink{}
	d := openT(b, vfs.NewMem(), sink, func(o *Options) { o.BufferEntries = 1 << 20; o.BlockEntries = 0 })
	defer d.Close()
	urls := make([]string, 32)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for j := range urls {
			urls[j] = fmt.Sprintf("http://a.test/%d/%d", i, j)
			if err := d.Add(fingerprint.URL(urls[j]), urls[j]); err != nil {
				b.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}
