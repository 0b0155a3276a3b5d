package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/harness"
	"github.com/sextant-crawler/sextant/bench/internal/procstat"
	"github.com/sextant-crawler/sextant/simweb"
)

// web is the one simweb process every run crawls (in its own namespace,
// unshaped, unlimited), the same web computed in-process and its oracle.
type web struct {
	cmd    *exec.Cmd
	cg     *cgroup // no quota; the nodes' weight, so that the tenants' load does not starve it
	web    *simweb.Web
	oracle map[string]struct{}
	size   int
	addr   string // host:port on the bridge
	seeds  string // file
	out    string
}

// startWeb serves the web of -hosts/-pages in namespace ns on webIP():80
// and computes its oracle (sitemaps read, as the nodes do by default).
func startWeb(ctx context.Context, o options, crawler, ns string) (w *web, err error) {
	w = &web{addr: webIP() + ":80", out: filepath.Join(o.work, "simweb.out")}
	args := []string{"simweb", "--hosts", strconv.Itoa(o.hosts), "--pages", strconv.Itoa(o.pages), "--no-latency",
		"--no-pathologies", "--plain", "--listen", w.addr, "--allow-remote"}
	cg, err := newCgroup(ns, 0, o.shares)
	if err != nil {
		return nil, err
	}
	w.cg = cg
	bin, argv := harness.NetnsCommand(ns, crawler, args...)
	w.cmd = exec.Command("sh", append([]string{"-c", cg.joinScript() + "exec \"$@\"", "sh", bin}, argv...)...)
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w.cmd.Stderr = os.Stderr
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	up := make(chan string, 1)
	go func() {
		f, _ := os.Create(w.out)
		defer f.Close()
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`^serving \d+ hosts \S+ on (\S+)$`)
		for sc.Scan() {
			fmt.Fprintln(f, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				up <- m[1]
			}
		}
		close(up)
	}()
	if err := w.computeOracle(o); err != nil {
		w.close()
		return nil, err
	}
	select {
	case _, ok := <-up:
		if !ok {
			w.close()
			return nil, fmt.Errorf("simweb exited without serving; see %s", w.out)
		}
	case <-ctx.Done():
		w.close()
		return nil, ctx.Err()
	case <-time.After(10 * time.Minute):
		w.close()
		return nil, errors.New("simweb did not serve within 10 minutes")
	}
	w.seeds = filepath.Join(o.work, "seeds.txt")
	if err := os.WriteFile(w.seeds, []byte(strings.Join(w.web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// computeOracle builds the served web in-process (the flags of
// `crawler simweb` above) and its oracle.
func (w *web) computeOracle(o options) (err error) {
	cfg := simweb.DefaultConfig()
	cfg.Hosts = o.hosts
	cfg.PagesPerHost = float64(o.pages) / float64(o.hosts)
	cfg.NoPathologies = true
	cfg.HTTPSShare, cfg.RedirectHTTPSShare, cfg.H2Share, cfg.HSTSShare = 0, 0, 0, 0
	if w.web, err = simweb.New(cfg); err != nil {
		return err
	}
	or, err := w.web.Oracle(w.web.Seeds(), simweb.Rules{Sitemaps: true})
	if err != nil {
		return err
	}
	w.size = or.Size()
	w.oracle = make(map[string]struct{}, w.size)
	for _, u := range or.Fetched {
		w.oracle[u] = struct{}{}
	}
	return nil
}

// cpu is the simweb process's CPU time so far.
func (w *web) cpu() float64 { return procstat.CPU(w.cmd.Process.Pid) }

func (w *web) close() {
	if w.cg != nil {
		defer w.cg.remove()
	}
	if w.cmd == nil || w.cmd.Process == nil {
		return
	}
	_ = w.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// check compares the union of the nodes' fetched URLs with the oracle.
// URLs on no host of the web (its deliberately unresolvable
// nohost.sim.test, which the resolver override sends to simweb) are
// counted apart, as in `make bench`.
func (w *web) check(fetched map[string]int, r *runResult) {
	for u, n := range fetched {
		if !w.onWeb(u) {
			r.OffWeb++
			delete(fetched, u)
			continue
		}
		if n > 1 {
			r.Twice++
		}
		if _, ok := w.oracle[u]; !ok {
			r.Extra++
			if len(r.ExtraEx) < 3 {
				r.ExtraEx = append(r.ExtraEx, u)
			}
		}
	}
	for u := range w.oracle {
		if _, ok := fetched[u]; !ok {
			r.Missing++
			if len(r.MissingEx) < 3 {
				r.MissingEx = append(r.MissingEx, u)
			}
		}
	}
	r.Distinct, r.Oracle = len(fetched), w.size
}

func (w *web) onWeb(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	_, ok := w.web.HostIndex(pu.Hostname())
	return ok
}
