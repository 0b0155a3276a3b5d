package crawl

import (
	"path/filepath"
	"testing"

	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// operatorTLS is the operator identity of the loopback cluster in pkiDir.
func operatorTLS(t testing.TB, pkiDir string) *tlsutil.Node {
	t.Helper()
	tn, err := LoopbackOperator(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func (c *elasticCluster) operator() *tlsutil.Node {
	return operatorTLS(c.t, filepath.Join(c.root, "pki"))
}

// stopAll cancels every member's Run, waits for it and closes the members.
func (c *elasticCluster) stopAll() {
	c.mu.Lock()
	for _, stop := range c.stop {
		stop()
	}
	c.mu.Unlock()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.ms {
		m.Close()
	}
}
