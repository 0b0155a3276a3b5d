package crawl

// Dispatch is the node's frontier dispatch (frontier.DispatchAny or
// frontier.DispatchHostAffine), for the reports: it says which worker's
// front cache sees a host's links.
func (n *Node) Dispatch() string { return n.opts.Frontier.Dispatch }
