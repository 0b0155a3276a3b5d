package due

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/fingerprint"
	"github.com/sextant-crawler/sextant/internal/killtest"
)

const killCands = 30000

func killStream() []string {
	s := newStream(11)
	out := make([]string, killCands)
	for i := range out {
		out[i] = s.next()
	}
	return out
}

// fileSink is a durable model frontier: batch seq is applied by renaming a
// fully written file into place, and a seq ≤ the highest applied one is
// ignored.
type fileSink struct{ dir string }

func (s fileSink) last() uint64 {
	names, _ := filepath.Glob(filepath.Join(s.dir, "f-*"))
	var last uint64
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(filepath.Base(n), "f-"), 10, 64)
		if err == nil {
			last = max(last, v)
		}
	}
	return last
}

func (s fileSink) Deliver(seq uint64, batch []Entry) error {
	if seq <= s.last() {
		return nil
	}
	urls := make([]string, len(batch))
	for i, e := range batch {
		urls[i] = e.URL
	}
	p := filepath.Join(s.dir, fmt.Sprintf("f-%d", seq))
	if err := os.WriteFile(p+".tmp", []byte(strings.Join(urls, "\n")), 0o644); err != nil {
		return err
	}
	return os.Rename(p+".tmp", p)
}

func (s fileSink) all() []string {
	var out []string
	for seq := uint64(1); seq <= s.last(); seq++ {
		b, err := os.ReadFile(filepath.Join(s.dir, fmt.Sprintf("f-%d", seq)))
		if err != nil {
			panic(err)
		}
		out = append(out, strings.Split(string(b), "\n")...)
	}
	return out
}

func killChild() {
	dir := os.Getenv("DUE_KILL_DIR")
	from, _ := strconv.Atoi(os.Getenv("DUE_KILL_FROM"))
	mode := SyncWrite
	if os.Getenv("DUE_KILL_SYNC") == "always" {
		mode = SyncAlways
	}
	out := bufio.NewWriter(os.Stdout)
	d, err := Open(filepath.Join(dir, "due"), Options{
		Sink: fileSink{dir}, Sync: mode, BufferEntries: 500, FlushInterval: 20 * time.Millisecond,
		BlockEntries: 64, RunRatio: 2,
	})
	if err != nil {
		fmt.Fprintln(out, "error", err)
		out.Flush()
		os.Exit(1)
	}
	cands := killStream()
	for i := from; i < len(cands); i++ {
		if err := d.Add(fingerprint.URL(cands[i]), cands[i]); err != nil {
			fmt.Fprintln(out, "error", err)
			out.Flush()
			os.Exit(1)
		}
		fmt.Fprintln(out, "ack", i)
		if i%64 == 0 {
			out.Flush()
		}
	}
	out.Flush()
	for d.Flush() != nil {
	}
	if err := d.Close(); err != nil {
		fmt.Fprintln(out, "error", err)
	}
	fmt.Fprintln(out, "done")
	out.Flush()
}

func runKill9(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	next, kills := 0, 0
	for attempt := 0; ; attempt++ {
		if attempt > 60 {
			t.Fatal("child never finished")
		}
		sync := "write"
		if attempt%2 == 1 {
			sync = "always"
		}
		c := killtest.Start(t, killtest.Options{Run: "TestKill9", Env: []string{"DUE_KILL_CHILD=1", "DUE_KILL_DIR=" + dir,
			"DUE_KILL_FROM=" + strconv.Itoa(next), "DUE_KILL_SYNC=" + sync}})
		if kills < 12 {
			time.Sleep(time.Duration(5+rng.IntN(150)) * time.Millisecond)
			c.Kill()
		}
		werr := c.Wait(5 * time.Minute)
		done := false
		for _, line := range strings.Split(c.Output(), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 2 && f[0] == "ack":
				i, _ := strconv.Atoi(f[1])
				next = max(next, i+1)
			case len(f) == 1 && f[0] == "done":
				done = true
			case len(f) > 0 && f[0] == "error":
				t.Fatalf("child: %s", line)
			}
		}
		if done {
			break
		}
		if werr == nil {
			t.Fatal("child exited without finishing")
		}
		kills++
		t.Logf("attempt %d (sync %s): killed after %d candidates acknowledged", attempt, sync, next)
	}
	t.Logf("%d kills", kills)
	var or oracle
	for _, u := range killStream() {
		or.add(u)
	}
	got := fileSink{dir}.all()
	if len(got) != len(or.want) {
		// Report the first difference to help debugging.
		seen := map[string]int{}
		for _, u := range got {
			seen[u]++
		}
		for _, u := range or.want {
			if seen[u] != 1 {
				t.Errorf("%q delivered %d times", u, seen[u])
				break
			}
		}
	}
	checkStream(t, got, or.want)
}
