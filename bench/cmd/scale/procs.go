package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/procstat"
	"github.com/sextant-crawler/sextant/simweb"
)

// buildCrawler builds the crawler from the repository at root into bin.
func buildCrawler(ctx context.Context, root, bin string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/crawler")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/crawler in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// scaleConfig is the web of a run with hosts hosts: the scale preset
// (`crawler simweb --preset scale --hosts N` builds the same).
func scaleConfig(hosts int) simweb.Config {
	c := simweb.ScaleConfig()
	c.Hosts = hosts
	return c
}

// webProc is the `crawler simweb` process and the same web, in-process.
type webProc struct {
	cmd   *exec.Cmd
	addr  string
	web   *simweb.Web
	seeds string // file
	exit  chan struct{}
}

// startWeb starts `crawler simweb --preset scale` in its own process (so
// that its RSS and CPU are not the crawler's) and waits for its address.
func startWeb(ctx context.Context, o options) (*webProc, error) {
	web, err := simweb.New(scaleConfig(o.hosts))
	if err != nil {
		return nil, err
	}
	w := &webProc{web: web, seeds: filepath.Join(o.out, "seeds.txt"), exit: make(chan struct{})}
	if err := os.WriteFile(w.seeds, []byte(strings.Join(web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	w.cmd = exec.Command(o.crawler, "simweb", "--preset", "scale", "--hosts", strconv.Itoa(o.hosts),
		"--shape=false", "--no-pathologies", "--no-latency", "--listen", "127.0.0.1:0")
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w.cmd.Stderr = os.Stderr
	line := regexp.MustCompile(`^serving \d+ hosts \S+ on (\S+)$`)
	addr, err := startAndFind(w.cmd, filepath.Join(o.out, "simweb.out"), line, w.exit)
	if err != nil {
		return nil, fmt.Errorf("crawler simweb: %w", err)
	}
	select {
	case w.addr = <-addr:
		if w.addr == "" {
			w.close()
			return nil, fmt.Errorf("crawler simweb exited without serving; see %s", filepath.Join(o.out, "simweb.out"))
		}
		// The served web must be the one the oracle is computed for.
		b, _ := os.ReadFile(filepath.Join(o.out, "simweb.out"))
		if want := fmt.Sprintf(": %d hosts, %d articles", o.hosts, web.Pages()); !strings.Contains(string(b), want) {
			w.close()
			return nil, fmt.Errorf("crawler simweb serves another web than the harness's (no %q in its output: %s)", want, b)
		}
	case <-ctx.Done():
		w.close()
		return nil, ctx.Err()
	case <-time.After(5 * time.Minute):
		w.close()
		return nil, errors.New("crawler simweb did not serve within 5 minutes")
	}
	return w, nil
}

// startAndFind starts cmd with its stdout copied to path and sends the
// first submatch of the first line matching re ("" if none before EOF);
// exit is closed when the output ends.
func startAndFind(cmd *exec.Cmd, path string, re *regexp.Regexp, exit chan struct{}) (<-chan string, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		defer close(exit)
		defer f.Close()
		sent := false
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(f, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(f, stdout)
		if !sent {
			found <- ""
		}
	}()
	return found, nil
}

func (w *webProc) describe() string {
	return fmt.Sprintf("simweb.ScaleConfig with %d hosts: %d articles, plain HTTP, no pathologies, no sitemaps, no latency (`crawler simweb --preset scale --hosts %d --shape=false --no-pathologies --no-latency`), its own process",
		w.web.NumHosts(), w.web.Pages(), w.web.NumHosts())
}

func (w *webProc) cpu() float64 { return procCPU(w.cmd.Process.Pid) }

// close interrupts simweb and waits for it (killing it after 10 s).
func (w *webProc) close() {
	_ = w.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { <-w.exit; _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = w.cmd.Process.Kill()
		<-done
	}
}

// crawlProc is the `crawler crawl` process.
type crawlProc struct {
	cmd     *exec.Cmd
	data    string
	metrics string // URL of its /metrics
	command string
	exit    chan struct{}
}

// startCrawl starts `crawler crawl` on the web from its seeds, with
// /metrics on a loopback port.
func startCrawl(ctx context.Context, o options, w *webProc) (*crawlProc, error) {
	c := &crawlProc{data: filepath.Join(o.out, "data"), exit: make(chan struct{})}
	if err := os.RemoveAll(c.data); err != nil {
		return nil, err
	}
	args := []string{"crawl", "--seeds", w.seeds, "--data", c.data, "--resolve", w.web.Domain() + "=" + w.addr,
		"--allow-private", "--min-delay", "0", "--scope", "suffixes", "--suffix", w.web.Domain(), "--sitemaps", "off",
		"--workers", strconv.Itoa(o.workers), "--progress", "30s", "--metrics-listen", "127.0.0.1:0",
		"--report-json", filepath.Join(o.out, "crawl-report.json")}
	if o.maxWall > 0 {
		args = append(args, "--duration", o.maxWall.String())
	}
	args = append(args, o.crawlArgs...)
	c.command = "crawler " + strings.Join(args, " ")
	c.cmd = exec.Command(o.crawler, args...)
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.Stderr = os.Stderr
	found, err := startAndFind(c.cmd, filepath.Join(o.out, "crawl.out"), regexp.MustCompile(`^metrics on (\S+)$`), c.exit)
	if err != nil {
		return nil, fmt.Errorf("crawler crawl: %w", err)
	}
	select {
	case c.metrics = <-found:
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		return nil, ctx.Err()
	}
	if c.metrics == "" {
		err := c.cmd.Wait()
		return nil, fmt.Errorf("crawler crawl exited (%v) without serving metrics; see %s", err, filepath.Join(o.out, "crawl.out"))
	}
	return c, nil
}

// procCPU is a process's user+system CPU seconds so far (0 if gone).
func procCPU(pid int) float64 { return procstat.CPU(pid) }

// procMem is a process's resident set and its peak (VmRSS, VmHWM) in bytes.
func procMem(pid int) (rss, peak float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[0], 64)
		if k == "VmRSS" {
			rss = kb * 1024
		} else {
			peak = kb * 1024
		}
	}
	return rss, peak
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) float64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return float64(n)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
