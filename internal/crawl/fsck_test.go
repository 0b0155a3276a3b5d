package crawl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/simweb"
)

// damageKind is how a corruption case damages its target.
type damageKind string

const (
	damTruncate damageKind = "truncate" // to half its size
	damScribble damageKind = "scribble" // 4 KiB of random bytes from a third of it
	damDelete   damageKind = "delete"
)

// damage applies kind to path (a file, or a directory for delete).
func damage(t *testing.T, path string, kind damageKind, rng *rand.Rand) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("damage target: %v", err)
	}
	switch kind {
	case damTruncate:
		err = os.Truncate(path, fi.Size()/2)
	case damScribble:
		b := make([]byte, 4096)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		var f *os.File
		if f, err = os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			_, err = f.WriteAt(b, fi.Size()/3)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	case damDelete:
		err = os.RemoveAll(path)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// pickFile returns the file of dir matching glob that pick prefers: the
// largest, or the newest (highest name).
func pickFile(t *testing.T, dir, glob string, newest bool) string {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil || len(ms) == 0 {
		t.Fatalf("no %s in %s (a missing fixture is a failure): %v", glob, dir, err)
	}
	sort.Strings(ms)
	if newest {
		return ms[len(ms)-1]
	}
	best, size := "", int64(-1)
	for _, m := range ms {
		if fi, err := os.Stat(m); err == nil && fi.Size() > size {
			best, size = m, fi.Size()
		}
	}
	return best
}

// copyDir copies the regular files of src into dst, recursively.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if d.Name() == "LOCK" {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logURLsFrom adds to set the URLs fetched per the crawl log lines from
// byte offset off on (robots.txt excluded; lines that do not parse are
// skipped: the damaged part of a scribbled log lies before off).
func logURLsFrom(t *testing.T, path string, off int64, count map[string]int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if e, err := ParseLogLine(sc.Text()); err == nil && e.Outcome != OutcomeRobots {
			count[e.URL]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// corruptionCase damages one store file of a stopped crawl's directory.
type corruptionCase struct {
	store string // named by a refusal's error
	path  string // relative to the data dir; a glob for files
	kind  damageKind
	pick  bool // newest rather than largest match
}

func (c corruptionCase) name() string {
	return strings.NewReplacer("/", "_", "*", "X").Replace(c.path) + "/" + string(c.kind)
}

// corruptionMatrix is every damage of every store of a single node.
func corruptionMatrix() []corruptionCase {
	var cs []corruptionCase
	for _, k := range []damageKind{damTruncate, damScribble, damDelete} {
		cs = append(cs,
			corruptionCase{"frontier", "frontier/*.log", k, true},  // pebble WAL
			corruptionCase{"frontier", "frontier/*.sst", k, false}, // pebble sstable
			corruptionCase{"frontier", "frontier/MANIFEST-*", k, true},
			corruptionCase{"DUE", "due/*.run", k, false},
			corruptionCase{"DUE", "due/*.log", k, true}, // the buffer log
			corruptionCase{"DUE", "due/MANIFEST", k, false},
			corruptionCase{"crawl.log", "crawl.log", k, false},
		)
	}
	return append(cs,
		corruptionCase{"frontier", "frontier", damDelete, false},
		corruptionCase{"DUE", "due", damDelete, false},
		corruptionCase{"frontier", "frontier/marker.manifest.*", damDelete, true})
}

// Issue 23, defect 3: a damaged data directory must never lose a URL
// silently. A small-web crawl is stopped part-way; for each case a copy of
// its directory is damaged (truncated, scribbled on, deleted: pebble's WAL,
// sstable and MANIFEST, the DUE's runs, buffer log and MANIFEST, the crawl
// log, whole stores), then the crawl resumes. Either the resume completes
// with the oracle's fetched set, or it fails with an error naming the
// damaged store; then Repair rebuilds and a second resume must complete
// with the oracle's set. Every case ends with 0 URLs lost.
func TestCorruptionMatrix(t *testing.T) {
	web, srv, oracle := corruptionWeb(t)
	opts := func(dir string) Options { return corruptionOptions(t, dir, srv, web) }
	base := t.TempDir()
	start := time.Now()
	n, err := Open(opts(base))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if err := n.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	stopAt := uint64(oracle.Size() / 2)
	go func() {
		for ctx.Err() == nil && n.Stats().Fetches < stopAt {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	cancel()
	st := n.Stats()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if st.Fetches < stopAt || st.Fetches >= uint64(oracle.Size()) {
		t.Fatalf("base crawl stopped at %d fetches, want [%d, %d)", st.Fetches, stopAt, oracle.Size())
	}
	baseCount := map[string]int{}
	logURLsFrom(t, filepath.Join(base, crawlLogFile), 0, baseCount)
	t.Logf("base: %d of the oracle's %d URLs fetched in %v", len(baseCount), oracle.Size(), time.Since(start).Round(time.Millisecond))

	type result struct {
		c                      corruptionCase
		ran, refused, repaired bool
		lost, twice            int
		err                    string
	}
	cases := corruptionMatrix()
	results := make([]result, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // crawls wait on politeness mostly
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := &results[i]
			r.c = c
			t.Run(c.name(), func(t *testing.T) {
				r.ran = true
				dir := t.TempDir()
				copyDir(t, base, dir)
				rng := rand.New(rand.NewPCG(uint64(i), 23))
				target := filepath.Join(dir, c.path)
				if strings.Contains(c.path, "*") {
					target = pickFile(t, dir, c.path, c.pick)
				}
				damage(t, target, c.kind, rng)
				// The resumed lines start where the resume's Open cut a
				// torn last line: after the damaged log's last newline, not
				// at its end (counting from the end skipped the first
				// resumed line whenever the truncation left a torn line —
				// a "lost" URL whenever that line was a page, not robots).
				var off int64
				if b, err := os.ReadFile(filepath.Join(dir, crawlLogFile)); err == nil {
					off = int64(bytes.LastIndexByte(b, '\n') + 1)
				}
				err := resume(t, opts(dir), web.Seeds())
				if err != nil {
					r.refused, r.err = true, err.Error()
					if !strings.Contains(err.Error(), c.store) && !(c.store == "DUE" && strings.Contains(err.Error(), "due")) {
						t.Errorf("refusal does not name the %s: %v", c.store, err)
					}
					t0 := time.Now()
					rep, rerr := Repair(opts(dir))
					t.Logf("repair %v: %d URLs queued (%d from the old frontier, %d from the old DUE, %d from crawl.log)", time.Since(t0).Round(time.Millisecond), rep.Admitted, rep.FromFrontier, rep.FromDUE, rep.FromLog)
					if rerr != nil || !rep.Rebuilt {
						t.Fatalf("repair after %v: %+v, %v", err, rep, rerr)
					}
					r.repaired = true
					t0 = time.Now()
					if err := resume(t, opts(dir), web.Seeds()); err != nil {
						t.Fatalf("resume after repair: %v", err)
					}
					t.Logf("resume after repair %v", time.Since(t0).Round(time.Millisecond))
				}
				count := maps2(baseCount)
				logURLsFrom(t, filepath.Join(dir, crawlLogFile), off, count)
				tallyCase(t, count, oracle, &r.lost, &r.twice)
			})
		}()
	}
	wg.Wait()
	var b strings.Builder
	refused, lost := 0, 0
	fmt.Fprintf(&b, "%-34s %-8s %-8s %-8s %5s %6s  %s\n", "case", "damage", "refused", "repaired", "lost", "twice", "error")
	ran := 0
	for _, r := range results {
		if !r.ran {
			continue
		}
		ran++
		fmt.Fprintf(&b, "%-34s %-8s %-8v %-8v %5d %6d  %.110s\n", r.c.path, r.c.kind, r.refused, r.repaired, r.lost, r.twice, r.err)
		if r.refused {
			refused++
		}
		lost += r.lost
	}
	fmt.Fprintf(&b, "%d cases: %d refused and repaired, %d resumed as they were; %d URLs lost in all", ran, refused, ran-refused, lost)
	t.Logf("corruption matrix (base: %d fetched of %d; twice = fetched more than once over both runs):\n%s", len(baseCount), oracle.Size(), b.String())
}

// tallyCase adds what a corruption case's crawl logs say to *lost and
// *twice (oracle URLs never fetched; URLs fetched more than once over both
// runs) and fails t if the fetched set is not the oracle's.
func tallyCase(t *testing.T, count map[string]int, oracle *simweb.OracleResult, lost, twice *int) {
	t.Helper()
	var fetched []string
	for u, k := range count {
		fetched = append(fetched, u)
		if k > 1 {
			*twice++
		}
	}
	for _, u := range oracle.Fetched {
		if count[u] == 0 {
			*lost++
		}
	}
	if err := oracle.Check(fetched); err != nil {
		t.Errorf("%d URLs lost: %v", *lost, err)
	}
}

// corruptionBudget is the host budget of the corruption matrices: a trap
// host's budget of URLs, fetched one at a time, sets the crawl's length:
// 150 (the largest real host has 135).
const corruptionBudget = 150

// corruptionWeb is the web of the corruption matrices, with its oracle:
// half the small web's pages per host, so that the many crawls fit in CI.
func corruptionWeb(t *testing.T) (*simweb.Web, *simweb.Server, *simweb.OracleResult) {
	t.Helper()
	cfg := simweb.SmallConfig()
	cfg.PagesPerHost, cfg.MaxPagesPerHost = 30, 100
	cfg.StallTime, cfg.SlowLatency = 10*time.Millisecond, 2*time.Millisecond // a stalling host's pages are fetched one by one
	web, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{BodyCap: 1 << 20, MaxPagesPerHost: corruptionBudget, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	return web, srv, oracle
}

// corruptionOptions are a node's options in the corruption matrices.
func corruptionOptions(t *testing.T, dir string, srv *simweb.Server, web *simweb.Web) Options {
	o := testNodeOptions(t, dir, srv, web.Domain())
	o.MaxPagesPerHost = corruptionBudget
	o.Workers = 8
	o.Frontier.MemTableSize = 32 << 10                 // sstables as well as a WAL
	o.Fetcher.RobotsRetryDelay = 10 * time.Millisecond // an unreachable host's robots.txt: 3 attempts
	// Politeness is not under test: keep its delays tiny.
	o.Frontier.Factor, o.Frontier.MaxDelay, o.Frontier.MaxCrawlDelay = 0.01, 5*time.Millisecond, 5*time.Millisecond
	return o
}

func maps2(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// resume opens dir, seeds it again and crawls to the end: the error of
// Open, Run or Close.
func resume(t *testing.T, o Options, seeds []string) error {
	t.Helper()
	n, err := Open(o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err = n.Seed(ctx, seeds)
	if err == nil {
		err = n.Run(ctx, true)
	}
	err = errors.Join(err, n.Close())
	if err == nil && ctx.Err() != nil {
		t.Fatalf("crawl did not finish in time: %+v", n.Stats())
	}
	return err
}
