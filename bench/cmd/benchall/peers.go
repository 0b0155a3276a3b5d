package main

import (
	"context"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// The peers: Scrapy (Debian's python3-scrapy) and wget2 (Debian's wget2),
// run in the benchmark's network namespace, where the web's host names
// resolve through /etc/hosts (netns.go). Their exact configuration is
// documented in docs/bench/peers.md; keep the two in step.

// userAgent is Sextant's, given to every contender (robots.txt groups are
// matched against it).
const userAgent = "Sextant/0.1 (+https://github.com/sextant-crawler/sextant)"

// Debian's interpreter and wget2: the python3 first on PATH may be another
// installation without Scrapy.
var (
	scrapyPython = "/usr/bin/python3"
	wget2Bin     = "/usr/bin/wget2"
)

//go:embed sextant_spider.py
var scrapySpider []byte

// scrapyArgs is Scrapy's command line for a run writing into dir.
func scrapyArgs(o options, e *env, dir string) []string {
	spider := filepath.Join(dir, "sextant_spider.py")
	args := []string{"-m", "scrapy", "runspider", spider,
		"-a", "seeds=" + e.seeds, "-a", "domain=" + e.web.Domain(), "-a", "fetch_log=" + filepath.Join(dir, "fetch.log")}
	for _, s := range [][2]string{
		{"CONCURRENT_REQUESTS", strconv.Itoa(o.workers)},
		{"CONCURRENT_REQUESTS_PER_DOMAIN", "1"},
		{"CONCURRENT_REQUESTS_PER_IP", "0"},
		{"DOWNLOAD_DELAY", "0"},
		{"RANDOMIZE_DOWNLOAD_DELAY", "False"},
		{"AUTOTHROTTLE_ENABLED", "False"},
		{"ROBOTSTXT_OBEY", "True"},
		{"USER_AGENT", userAgent},
		// Breadth-first: FIFO queues, shallower requests first.
		{"DEPTH_PRIORITY", "1"},
		{"SCHEDULER_DISK_QUEUE", "scrapy.squeues.PickleFifoDiskQueue"},
		{"SCHEDULER_MEMORY_QUEUE", "scrapy.squeues.FifoMemoryQueue"},
		// Scrapy's advice for broad crawls (docs: "Broad Crawls"): one queue
		// per download slot. With the default queue, CONCURRENT_REQUESTS
		// counts requests waiting behind a busy host, and a BFS frontier
		// whose next 64 URLs are mostly on one host fetches one at a time
		// (≈10 pages/s here; docs/bench/peers.md).
		{"SCHEDULER_PRIORITY_QUEUE", "scrapy.pqueues.DownloaderAwarePriorityQueue"},
		{"HTTPCACHE_ENABLED", "False"},
		// A <meta http-equiv=refresh> is a link to Sextant and the oracle,
		// not a redirect: the middleware dropped the page's other links.
		{"METAREFRESH_ENABLED", "False"},
		// One fetch per URL, as the other contenders (a 404 is an answer).
		{"RETRY_ENABLED", "False"},
		{"DOWNLOAD_MAXSIZE", strconv.Itoa(16 << 20)},
		{"TELNETCONSOLE_ENABLED", "False"},
		{"LOG_FILE", filepath.Join(dir, "scrapy.log")},
		{"LOG_LEVEL", "INFO"},
	} {
		args = append(args, "-s", s[0]+"="+s[1])
	}
	return args
}

func runScrapy(ctx context.Context, o options, e *env, rep int) (r result) {
	if nsCur == nil {
		return result{Err: "scrapy needs the network namespace (-netns)"}
	}
	dir, err := runDir(o, "scrapy", rep)
	if err != nil {
		return result{Err: err.Error()}
	}
	if err := os.WriteFile(filepath.Join(dir, "sextant_spider.py"), scrapySpider, 0o644); err != nil {
		return result{Err: err.Error()}
	}
	return runPeer(ctx, o, dir, scrapyPython, scrapyArgs(o, e, dir), func() ([]string, error) {
		return readPeerStatusLog(filepath.Join(dir, "fetch.log"))
	}, nil)
}

// wget2Args is wget2's command line for a run logging into dir and saving
// the web under out (on tmpfs).
func wget2Args(o options, e *env, dir, out string) []string {
	return []string{"--recursive", "--level=0", "--span-hosts", "--domains=" + e.web.Domain(),
		"--max-threads=" + strconv.Itoa(o.workers), "--robots=on",
		// A host name that does not resolve is "temporary" to wget2, retried
		// 20 times with growing waits by default: 3 minutes for a 300-URL web.
		"--tries=1",
		"--user-agent=" + userAgent, "--no-verbose", "--output-file=" + filepath.Join(dir, "wget2.log"),
		"--stats-site=csv:" + filepath.Join(dir, "sites.csv"),
		"--directory-prefix=" + out, "--input-file=" + e.seeds}
}

func runWget2(ctx context.Context, o options, e *env, rep int) (r result) {
	if nsCur == nil {
		return result{Err: "wget2 needs the network namespace (-netns)"}
	}
	dir, err := runDir(o, "wget2", rep)
	if err != nil {
		return result{Err: err.Error()}
	}
	out := filepath.Join("/dev/shm", fmt.Sprintf("sextant-bench-%d-wget2-%d", os.Getpid(), rep))
	if err := os.RemoveAll(out); err != nil {
		return result{Err: err.Error()}
	}
	defer os.RemoveAll(out)
	// wget2 exits 8 when a server answered an error (the web's 404s) and 4
	// on a network failure (its unresolvable host): both are the web's.
	okExit := func(err error) bool {
		var ee *exec.ExitError
		return errors.As(err, &ee) && (ee.ExitCode() == 4 || ee.ExitCode() == 8)
	}
	return runPeer(ctx, o, dir, wget2Bin, wget2Args(o, e, dir, out), func() ([]string, error) {
		return readWget2Sites(filepath.Join(dir, "sites.csv"))
	}, okExit)
}

// runPeer runs one peer process to its end and reads its per-fetch log.
func runPeer(ctx context.Context, o options, dir, bin string, args []string, read func() ([]string, error), okExit func(error) bool) (r result) {
	if _, err := os.Stat(bin); err != nil {
		return result{Err: fmt.Sprintf("%v (Debian packages python3-scrapy and wget2)", err)}
	}
	t0 := time.Now()
	p, err := start(ctx, o, bin, filepath.Join(dir, "stdout"), args...)
	if err != nil {
		return result{Err: err.Error()}
	}
	werr := p.wait(ctx, o.runTimeout)
	r.Wall = time.Since(t0).Seconds()
	p.account(&r)
	if werr != nil && (okExit == nil || !okExit(werr)) {
		r.Err = failure(werr, filepath.Join(dir, "stdout"))
	}
	if r.fetched, err = read(); err != nil && r.Err == "" {
		r.Err = err.Error()
	}
	return r
}

// isRobots reports whether u is a robots.txt URL (excluded from the pages,
// as Sextant's crawl.log and colly's log exclude them).
func isRobots(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && pu.Path == "/robots.txt" && pu.RawQuery == ""
}

// readPeerStatusLog reads a "STATUS URL" log without its robots.txt fetches.
func readPeerStatusLog(path string) ([]string, error) {
	us, err := readStatusLog(path)
	if err != nil {
		return nil, err
	}
	out := us[:0]
	for _, u := range us {
		if !isRobots(u) {
			out = append(out, u)
		}
	}
	return out, nil
}

// readWget2Sites reads wget2's --stats-site CSV (ID, ParentID, URL, Status,
// …): one row per HTTP response. Names that did not resolve have no row.
func readWget2Sites(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord, cr.LazyQuotes, cr.ReuseRecord = -1, true, true
	var out []string
	for first := true; ; first = false {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		if first && len(rec) > 2 && rec[2] == "URL" {
			continue
		}
		if len(rec) < 4 {
			return out, fmt.Errorf("%s: a row of %d fields: %q", path, len(rec), rec)
		}
		if st, err := strconv.Atoi(rec[3]); err == nil && st > 0 && !isRobots(rec[2]) {
			out = append(out, rec[2])
		}
	}
}
