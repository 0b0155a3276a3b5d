package crawl

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// Issue 27: a cluster member's links for a peer that is down stay in its
// spool; export --what queued (and seen) lists them, with the peer, since
// no frontier holds them yet.
func TestExportIncludesSpooledURLs(t *testing.T) {
	web, srv, _ := smallWeb(t, 1<<20)
	root := t.TempDir()
	ms := startClusterWith(t, root, 2, srv, web.Domain(), func(o *Options) { o.Workers = 4 })
	if err := ms[1].Close(); err != nil { // the dead peer
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ms[0].Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := ms[0].Run(ctx); err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	if err := ms[0].Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "node-0")
	spooled := map[string]string{} // URL → peer
	if err := hostsplit.ReadSpool(filepath.Join(dir, spoolDir), hostsplit.Limits{}, func(b hostsplit.SpooledBatch) error {
		for _, s := range b.URLs {
			bare, _ := splitAnnot(s)
			spooled[bare] = string(b.Peer)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(spooled) == 0 {
		t.Fatal("nothing spooled for the dead peer: the test shows nothing")
	}
	for _, what := range []string{ExportQueued, ExportSeen} {
		got := map[string]ExportedURL{}
		for _, u := range exportAll(t, dir, what) {
			got[u.URL] = u
		}
		missing := 0
		for u, peer := range spooled {
			e, ok := got[u]
			switch {
			case !ok:
				missing++
			case e.Peer != peer || peer != "node-1" || (what == ExportSeen) != (e.Source == "spool"):
				t.Errorf("%s: %s spooled for %s exported as %+v", what, u, peer, e)
			}
		}
		if missing > 0 {
			t.Errorf("%s: %d of %d spooled URLs not exported", what, missing, len(spooled))
		}
	}
	t.Logf("%d URLs spooled for node-1, all exported", len(spooled))
}
