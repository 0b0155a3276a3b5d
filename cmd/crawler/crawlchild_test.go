package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/killtest"
	"github.com/sextant-crawler/sextant/simweb"
)

// sigChildEnv carries the child's command line (arguments separated by
// \x1f) to TestCrawlSignalChild.
const sigChildEnv = "SEXTANT_SIGTEST_ARGS"

// TestCrawlSignalChild is the child of TestCrawlSigintResumes and
// TestCrawlKill9WARC: it runs the real main() — signal handling included —
// with the arguments in $SEXTANT_SIGTEST_ARGS, and exits with its code. It
// does nothing in a normal run.
func TestCrawlSignalChild(t *testing.T) {
	args := os.Getenv(sigChildEnv)
	if args == "" {
		t.Skip("child of TestCrawlSigintResumes only")
	}
	os.Args = append([]string{"crawler"}, strings.Split(args, "\x1f")...)
	main() // exits
}

// crawlChild is a small simweb and the `crawler crawl` command line that
// crawls it in a child process (TestCrawlSignalChild), run again and again
// on the same --data by the tests that stop it.
type crawlChild struct {
	web          *simweb.Web
	srv          *simweb.Server
	tmp, logPath string
	args         []string
}

// newCrawlChild starts simweb (closed by t.Cleanup) and writes the seeds;
// extra flags are appended to the command line.
func newCrawlChild(t *testing.T, workers, bodyCap int, extra ...string) *crawlChild {
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	tmp := t.TempDir()
	seeds := filepath.Join(tmp, "seeds.txt")
	if err := os.WriteFile(seeds, []byte(strings.Join(web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "data")
	args := []string{"crawl", "--seeds", seeds, "--data", dir, "--allow-private", "--ca-file", writeSimwebCA(t, srv, tmp),
		"--resolve", web.Domain() + "=" + srv.Addr(), "--scope", "suffixes", "--suffix", web.Domain(),
		"--max-repeated-segments", "-1", "--workers", strconv.Itoa(workers), "--body-cap", strconv.Itoa(bodyCap), "--fetch-timeout", "3s",
		"--min-delay", "0", "--factor", "2", "--max-delay", "50ms",
		"--failure-backoff", "10ms", "--max-failure-backoff", "100ms", "--due-flush", "50ms",
		"--max-pages-per-host", "1000", "--progress", "0"}
	return &crawlChild{web: web, srv: srv, tmp: tmp, logPath: filepath.Join(dir, "crawl.log"), args: append(args, extra...)}
}

func (c *crawlChild) start(t *testing.T) *killtest.Child {
	return killtest.Start(t, killtest.Options{Run: "TestCrawlSignalChild", Env: []string{sigChildEnv + "=" + strings.Join(c.args, "\x1f")}})
}

// logLines counts the lines of the crawl log (0 before it exists).
func (c *crawlChild) logLines() int {
	b, _ := os.ReadFile(c.logPath)
	return bytes.Count(b, []byte("\n"))
}

// startUntil starts run i and waits until the crawl log has at least at
// lines: the crawl is then surely under way (signal handler installed).
// finished says the run ended first, successfully.
func (c *crawlChild) startUntil(t *testing.T, i, at int) (ch *killtest.Child, finished bool) {
	ch = c.start(t)
	err := ch.Until(5*time.Minute, func() bool { return c.logLines() >= at })
	switch {
	case errors.Is(err, killtest.ErrExited):
		if ch.Err() != nil {
			t.Fatalf("run %d failed before its stop: %v\n%s", i, ch.Err(), ch.Output())
		}
		return ch, true
	case err != nil:
		t.Fatalf("run %d: %v\n%s", i, err, ch.Output())
	}
	return ch, false
}

// runToEnd runs the crawl to its end.
func (c *crawlChild) runToEnd(t *testing.T) string {
	ch := c.start(t)
	if err := ch.Wait(5 * time.Minute); err != nil {
		t.Fatalf("final run: %v\n%s", err, ch.Output())
	}
	return ch.Output()
}
