package frontier

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/killtest"
)

// The kill test re-executes the test binary as a child crawler that works
// on a frontier directory; the parent kills it with SIGKILL at random moments
// and restarts it, then lets it finish and checks the fetch log.

const (
	childEnv     = "SEXTANT_FRONTIER_KILL_CHILD"
	killBatches  = 40
	killPerBatch = 50
	killHosts    = 30
	killWorkers  = 4
)

func killBatch(b int) []Item {
	var it []Item
	for k := range killPerBatch {
		host := fmt.Sprintf("h%d", (b*7+k)%killHosts)
		it = append(it, Item{URL: fmt.Sprintf("http://%s/b%d-%d", host, b, k), Host: host})
	}
	return it
}

// childMain runs the child crawler when the environment asks for it and
// reports whether it did.
func childMain() bool {
	dir := os.Getenv(childEnv)
	if dir == "" {
		return false
	}
	if err := runChild(dir, os.Getenv(childEnv+"_SYNC_DONE") != ""); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

func runChild(dir string, syncDone bool) error {
	f, err := Open(filepath.Join(dir, "frontier"), Options{Workers: killWorkers, Factor: 1e-9,
		MaxDelay: time.Nanosecond, SyncDone: syncDone})
	if err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(dir, "fetched.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, killWorkers+1)
	for range killWorkers {
		wg.Go(func() {
			for {
				l, err := f.Next(ctx)
				if err != nil {
					if ctx.Err() == nil {
						errc <- err
					}
					return
				}
				// "Fetch": log before Done, so a kill in between re-fetches.
				if _, err := log.WriteString(l.URL + "\n"); err != nil {
					errc <- err
					return
				}
				time.Sleep(100 * time.Microsecond)
				if err := f.Done(l, Result{Duration: time.Millisecond}); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	// The producer re-delivers every batch from the start after a restart:
	// AddBatch must ignore those already applied.
	for b := 1; b <= killBatches; b++ {
		if err := f.AddBatch("gen", uint64(b), killBatch(b)); err != nil {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
	for !f.Idle() {
		select {
		case err := <-errc:
			return err
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	wg.Wait()
	if err := f.Close(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644)
}

// TestKill9 kills a child crawler several times and checks that no URL is
// lost. With SyncDone only the leases in flight at each kill are fetched
// again; without it (the default) a Done not yet synced is lost too, so
// more URLs may be fetched twice, but still none is lost.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	t.Run("SyncDone", func(t *testing.T) { testKill9(t, true) })
	t.Run("NoSyncDone", func(t *testing.T) { testKill9(t, false) })
}

func testKill9(t *testing.T, syncDone bool) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	start := func() *killtest.Child {
		env := []string{childEnv + "=" + dir}
		if syncDone {
			env = append(env, childEnv+"_SYNC_DONE=1")
		}
		return killtest.Start(t, killtest.Options{Env: env, Tee: os.Stderr})
	}
	kills := 0
	for range 6 {
		c := start()
		time.Sleep(time.Duration(20+rng.IntN(150)) * time.Millisecond)
		killed := c.Kill()
		if _, done := os.Stat(filepath.Join(dir, "complete")); done == nil {
			t.Logf("child finished before the kill")
			break
		}
		if !killed {
			t.Fatalf("child was not killed: %v", c.Err())
		}
		kills++
	}
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		if err := start().Wait(60 * time.Second); err != nil {
			t.Fatalf("final child: %v", err)
		}
	}
	// Every URL of every batch was fetched; only a URL in flight at a kill
	// may have been fetched twice.
	fl, err := os.Open(filepath.Join(dir, "fetched.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	count := map[string]int{}
	sc := bufio.NewScanner(fl)
	for sc.Scan() {
		count[sc.Text()]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for b := 1; b <= killBatches; b++ {
		for _, it := range killBatch(b) {
			want[it.URL] = true
		}
	}
	var missing, extra []string
	dups := 0
	for u := range want {
		if count[u] == 0 {
			missing = append(missing, u)
		}
		dups += max(count[u]-1, 0)
	}
	for u := range count {
		if !want[u] {
			extra = append(extra, u)
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("after %d kills: %d URLs never fetched (%s), %d unknown (%s)", kills, len(missing),
			strings.Join(missing[:min(5, len(missing))], " "), len(extra), strings.Join(extra[:min(5, len(extra))], " "))
	}
	if syncDone && dups > kills*killWorkers {
		t.Fatalf("after %d kills: %d re-fetches, more than %d workers × kills", kills, dups, killWorkers)
	}
	t.Logf("%d kills, %d URLs fetched, %d fetched again after a kill", kills, len(count), dups)
}
