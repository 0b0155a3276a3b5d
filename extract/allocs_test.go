package extract

import (
	"bytes"
	"testing"
)

// TestExtractAllocs bounds the extractor's allocations beyond the
// tokenizer's own: one per emitted link (its URL string), plus TagAttr's
// copies for tags with entities (about one in three links on the bench
// page), the charset prescan and the per-document tokenizer. Splitting
// every tag with TagAttr instead would exceed the bound (344 extra).
func TestExtractAllocs(t *testing.T) {
	page := benchPage()
	base := mustURL(t, "http://www.example.com/news/2024/article.html")
	e, _ := New(Options{})
	var links int
	ext := testing.AllocsPerRun(20, func() {
		res, _ := e.Extract(bytes.NewReader(page), base, "text/html", func(Link) {})
		links = res.Links
	})
	tok := testing.AllocsPerRun(20, func() { tokenizeOnly(page) })
	extra := ext - tok
	t.Logf("allocs per page: extract %.0f, bare tokenizer %.0f, extra %.0f for %d links", ext, tok, extra, links)
	if extra > 2*float64(links)+20 {
		t.Errorf("extractor allocates %.0f beyond the tokenizer for %d links", extra, links)
	}
}
