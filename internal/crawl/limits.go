package crawl

// Limits returns the bounds that make the node drop URLs: the hard
// per-host budget (Options.MaxPagesPerHost, ≤ 0 none) and the link depth
// bound (Options.MaxDepth, 0 none), for the report to name them.
func (n *Node) Limits() (maxPagesPerHost, maxDepth int) {
	return n.opts.MaxPagesPerHost, n.opts.MaxDepth
}
