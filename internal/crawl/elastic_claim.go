package crawl

// Claiming a fetch (issue 25). PREPARE stops the workers before hosts move
// to other nodes, and must not return while a worker may still send a
// request to one of them. Waiting for Run's workers to exit was not
// enough: when PREPARE came after Run had decided to start the workers
// but before it had started them, PREPARE saw no worker running and
// returned, and the workers then fetched (and routed links) until Run
// noticed the phase change. Now each leased URL is claimed under the
// phase's lock: a claim succeeds only in PhaseRunning and counts the
// worker as fetching until its URL is processed, and PREPARE, having left
// PhaseRunning under that lock, waits for the claims made before.

// fetchClaims is the part of a Member's elastic state that counts claims
// (guarded by elastic.mu).
type fetchClaims struct {
	fetching int           // workers with a claimed URL
	idle     chan struct{} // closed when fetching drops to 0; nil while 0
}

// claimFetch reports whether a worker holding a lease may process it (its
// robots.txt, sitemaps and page requests, its links routed): only while the
// member runs. A true claim must be ended by endClaim.
func (m *Member) claimFetch() bool {
	e := &m.el
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.phase != PhaseRunning {
		return false
	}
	if e.claims.fetching == 0 {
		e.claims.idle = make(chan struct{})
	}
	e.claims.fetching++
	return true
}

// endClaim ends a claim of claimFetch.
func (m *Member) endClaim() {
	e := &m.el
	e.mu.Lock()
	defer e.mu.Unlock()
	e.claims.fetching--
	if e.claims.fetching == 0 {
		close(e.claims.idle)
		e.claims.idle = nil
	}
}

// claimsEnded returns a channel closed once no claim is held (closed
// already if none is).
func (m *Member) claimsEnded() <-chan struct{} {
	e := &m.el
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.claims.fetching == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return e.claims.idle
}

// claimFetch is the Node's side: a Node not in a cluster always may.
func (n *Node) claimFetch() bool { return n.claim == nil || n.claim() }

func (n *Node) endClaim() {
	if n.claim != nil {
		n.unclaim()
	}
}
