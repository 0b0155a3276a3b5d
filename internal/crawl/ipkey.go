package crawl

import (
	"sync"

	"github.com/sextant-crawler/sextant/frontier"
)

// lookupWorkers bounds the concurrent name lookups of one DUE batch.
const lookupWorkers = 16

// keyByIP sets each item's politeness key to the address its host name
// resolves to (Options.PolitenessKey "ip"), keeping the host name as the
// budget key (Site). Distinct names are resolved in parallel; the goroutines
// end before it returns. A name that does not resolve keeps its host name.
func (n *Node) keyByIP(items []frontier.Item) {
	keys := map[string]string{}
	for i := range items {
		keys[items[i].Host] = ""
	}
	names := make(chan string)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(lookupWorkers, len(keys)) {
		wg.Go(func() {
			for h := range names {
				key := n.politenessKey(h)
				mu.Lock()
				keys[h] = key
				mu.Unlock()
			}
		})
	}
	for h := range keys {
		names <- h
	}
	close(names)
	wg.Wait()
	for i := range items {
		it := &items[i]
		it.Site, it.Host = it.Host, keys[it.Host]
	}
}
