package crawl

import (
	"strconv"
	"testing"
)

// BenchmarkAnnotate annotates the links of one page as route does: 50
// same-site links (links and embeds), found on a page 3 hops from a seed.
func BenchmarkAnnotate(b *testing.B) {
	w := &worker{cur: "http://h00001.sim.test/articles/2024/index.html", ca: annot{hops: "LLL"}}
	links := make([]string, 50)
	for i := range links {
		links[i] = "http://h00001.sim.test/articles/2024/post-" + strconv.Itoa(i) + ".html"
		hop := byte(HopLink)
		if i%5 == 0 {
			hop = HopEmbed
		}
		w.kinds = append(w.kinds, hop)
	}
	b.ReportAllocs()
	for b.Loop() {
		for i, s := range links {
			_ = w.annotate(s, i)
		}
	}
}
