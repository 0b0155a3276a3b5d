package crawl

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/simweb"
)

// Every --warc-compression setting writes files that both readers
// validate, one record per fetch of crawl.log (checkArchive), and each
// compresses as it says: stored members are larger than their records,
// Huffman-only ones lie between stored and level 1, level 6 below level 1.
func TestCompressionLevels(t *testing.T) {
	web, err := simweb.New(simweb.Config{Seed: 3, Hosts: 40, PagesPerHost: 5, MinPagesPerHost: 2, MaxPagesPerHost: 12, NoPathologies: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLatency: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var mu sync.Mutex
	ratio := map[string]float64{}
	t.Run("crawls", func(t *testing.T) {
		for _, c := range []string{"fast", "huffman", "store", "6"} {
			t.Run(c, func(t *testing.T) {
				t.Parallel() // each crawl mostly waits for its last host's robots.txt retry
				r := crawlCompressed(t, web, srv, c)
				mu.Lock()
				ratio[c] = r
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}
	if !(ratio["store"] > 1 && ratio["store"] > ratio["huffman"] && ratio["huffman"] > ratio["fast"] && ratio["fast"] > ratio["6"]) {
		t.Errorf("member/block ratios %v: want store > 1, store > huffman > fast > 6", ratio)
	}
}

// crawlCompressed crawls web with WARC compression c, checks the archive
// and returns the ratio of its response records' member bytes to their
// blocks' bytes.
func crawlCompressed(t *testing.T, web *simweb.Web, srv *simweb.Server, c string) float64 {
	dir := t.TempDir()
	o := testNodeOptions(t, filepath.Join(dir, "data"), srv, web.Domain())
	o.Frontier.Factor, o.Frontier.FactorSet = 0, true // no politeness delay: a quick crawl
	o.WARCArchive = WARCArchive{Dir: filepath.Join(dir, "warc"), MaxSize: 64 << 10, Compression: c}
	n, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	st := crawlToEnd(t, n, web.Seeds(), 2*time.Minute)
	if st.WARCErrors != 0 || st.WARCRecords == 0 {
		t.Errorf("WARC records %d, errors %d", st.WARCRecords, st.WARCErrors)
	}
	recs := checkArchive(t, o.WARCArchive.Dir, filepath.Join(o.DataDir, "crawl.log"))
	var member, block int64
	for _, r := range recs {
		if r.Type == "response" {
			member, block = member+r.Size, block+int64(len(r.Block))
		}
	}
	t.Logf("response members %d bytes for %d bytes of blocks (%.3f)", member, block, float64(member)/float64(block))
	return float64(member) / float64(block)
}

// A bad setting is refused when the options are validated, with or
// without a WARC directory.
func TestCompressionRefused(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		o := DefaultOptions()
		o.DataDir, o.WARCArchive.Dir, o.WARCArchive.Compression = t.TempDir(), dir, "0"
		o.EnsureDefaults()
		if err := o.Validate(); err == nil {
			t.Errorf("Compression %q with Dir %q: no error", o.WARCArchive.Compression, dir)
		}
	}
}
