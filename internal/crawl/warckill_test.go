package crawl

import (
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/killtest"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
)

// Issue 27: a page's crawl log line and its frontier completion wait for
// its WARC records in a tail goroutine (warctail.go), after the worker has
// moved on. kill -9 the archiving node at random moments, restart it on
// the same directories, let it finish: every WARC file validates with
// both readers, every fetch crawl.log records is archived, and every page
// the server served is archived (a page in flight at a kill was not done,
// so the restart fetched and archived it again).
func TestKillNineArchives(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	web, srv, _ := smallWeb(t, killBodyCap)
	dir, wdir := t.TempDir(), t.TempDir()
	child := func() *killtest.Child {
		return killtest.Start(t, killtest.Options{Run: "TestKillChildNode",
			Env: []string{killChildEnv + "=" + dir, killAddrEnv + "=" + srv.Addr(), killWARCEnv + "=" + wdir, caEnv(srv)}})
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 27))
	t.Logf("kill schedule seed %d", seed)
	kills := 0
	for i := 0; i < 3; i++ {
		c := child()
		delay := time.Duration(500+rng.IntN(3000)) * time.Millisecond
		select {
		case <-c.Done():
			if c.Err() != nil {
				t.Fatalf("child failed: %v\n%s", c.Err(), c.Output())
			}
			t.Logf("trial %d: child finished before its kill at %v", i, delay)
			continue
		case <-time.After(delay):
		}
		if !c.Kill() && c.Err() != nil {
			t.Fatalf("child failed before its kill: %v\n%s", c.Err(), c.Output())
		}
		kills++
	}
	final := child()
	if err := final.Wait(5 * time.Minute); err != nil {
		t.Fatalf("final run: %v\n%s", err, final.Output())
	}

	if open, _ := filepath.Glob(filepath.Join(wdir, "*.open")); len(open) > 0 {
		t.Errorf("files left open: %v", open)
	}
	files, _ := filepath.Glob(filepath.Join(wdir, "*.warc.gz"))
	recs, err := warctest.ValidateAll(files)
	if err != nil {
		t.Fatalf("after %d kills: %v", kills, err)
	}
	archived := map[string]bool{}
	for _, r := range recs {
		if r.Type == "response" || r.Type == "revisit" {
			archived[r.URI] = true
		}
	}
	es, err := ReadLogFile(filepath.Join(dir, crawlLogFile))
	if err != nil {
		t.Fatal(err)
	}
	var notArchived []string
	logged := 0
	for _, e := range es {
		if e.Outcome == OutcomeRobots || e.Status <= 0 {
			continue
		}
		logged++
		if !archived[e.URL] {
			notArchived = append(notArchived, e.URL)
		}
	}
	if len(notArchived) > 0 {
		t.Errorf("%d fetches in crawl.log not archived, e.g. %v", len(notArchived), notArchived[:min(5, len(notArchived))])
	}
	fetched, _, _ := serverFetched(web, srv)
	var lost []string
	for _, u := range fetched {
		if !archived[u] && !strings.Contains(u, "/robots") {
			lost = append(lost, u)
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		t.Errorf("%d pages the server served are not in the archive, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	if logged == 0 || len(fetched) == 0 {
		t.Fatalf("nothing crawled: %d logged, %d served", logged, len(fetched))
	}
	t.Logf("%d kills; %d files, %d records; %d fetches logged, %d pages served, all archived", kills, len(files), len(recs), logged, len(fetched))
}
