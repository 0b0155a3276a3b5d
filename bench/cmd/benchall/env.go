package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	whatwg "github.com/nlnwa/whatwg-url/url"
	"github.com/sextant-crawler/sextant/bench/internal/procstat"
	"github.com/sextant-crawler/sextant/simweb"
)

type binaries struct{ crawler, ceiling, colly, prof, rusage string }

// build compiles the crawler from the repository (its own module) and the
// two bench programs from this module.
func build(ctx context.Context, o options) (binaries, error) {
	dir := filepath.Join(o.work, "bin")
	b := binaries{crawler: filepath.Join(dir, "crawler"), ceiling: filepath.Join(dir, "ceiling"), colly: filepath.Join(dir, "collycrawl"),
		prof: filepath.Join(dir, "sextantprof"), rusage: filepath.Join(dir, "rusage")}
	steps := []struct {
		wd   string
		args []string
	}{
		{o.root, []string{"build", "-o", b.crawler, "./cmd/crawler"}},
		{".", []string{"build", "-o", dir + "/", "github.com/sextant-crawler/sextant/bench/cmd/ceiling",
			"github.com/sextant-crawler/sextant/bench/cmd/collycrawl", "github.com/sextant-crawler/sextant/bench/cmd/sextantprof",
			"github.com/sextant-crawler/sextant/bench/cmd/rusage"}},
	}
	for _, s := range steps {
		t0 := time.Now()
		cmd := exec.CommandContext(ctx, "go", s.args...)
		cmd.Dir = s.wd
		if s.wd == o.root {
			cmd.Env = rootEnv()
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(s.args, " "), s.wd, err, out)
		}
		logf("built: go %s (%v)", strings.Join(s.args, " "), time.Since(t0).Round(time.Millisecond))
	}
	usageBin = b.rusage
	return b, nil
}

// env is the shared synthetic web (a `crawler simweb` process), its oracle
// and the files every contender reads. The main web is plain HTTP (the web
// the history rows measured); tls, when an -https contender is asked for,
// is the same web with the presets' HTTPS (most hosts HTTPS, some h2), in
// a second simweb process, for the HTTPS row.
type env struct {
	tls       *env
	https     bool
	ca        string // file: the CA of an HTTPS web (simweb --ca-out)
	bins      binaries
	web       *simweb.Web
	oracle    *simweb.OracleResult
	oset      map[string]struct{}
	addr      string
	seeds     string // file
	urls      string // file: the oracle's URL list (the ceiling's input)
	pki       string // dir made by `crawler certs`
	simweb    *exec.Cmd
	simOut    string
	shapeLine string
	describeT time.Duration
}

func startEnv(ctx context.Context, o options, bins binaries) (*env, error) {
	e, err := startWeb(ctx, o, bins, false)
	if err != nil {
		return nil, err
	}
	for _, k := range o.kinds {
		if strings.HasSuffix(k, "-https") && e.tls == nil {
			if e.tls, err = startWeb(ctx, o, bins, true); err != nil {
				e.close()
				return nil, err
			}
		}
	}
	return e, nil
}

// forKind is the web a contender crawls.
func (e *env) forKind(kind string) *env {
	if strings.HasSuffix(kind, "-https") && e.tls != nil {
		return e.tls
	}
	return e
}

// startWeb starts one simweb process (plain HTTP, or with HTTPS) and
// computes its oracle.
func startWeb(ctx context.Context, o options, bins binaries, https bool) (*env, error) {
	e := &env{bins: bins, https: https}
	sub := o.work
	if https {
		sub = filepath.Join(o.work, "https")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		e.ca = filepath.Join(sub, "simweb-ca.pem")
	}
	// simweb in its own process: it computes its shape (an oracle walk) and
	// serves. In parallel, the same web's oracle is computed here.
	args := []string{"simweb", "--hosts", strconv.Itoa(o.hosts), "--pages", strconv.Itoa(o.pages), "--no-latency", "--no-pathologies"}
	if https {
		args = append(args, "--ca-out", e.ca)
	} else {
		args = append(args, "--plain")
		if nsCur != nil {
			// The peers dial the host names' port 80 at the address the
			// namespace's /etc/hosts gives them.
			args = append(args, "--listen", "127.0.0.1:80")
		}
	}
	bin, argv := nsCur.command(bins.crawler, args...)
	e.simweb = exec.Command(bin, argv...)
	e.simweb.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	e.simOut = filepath.Join(sub, "simweb.out")
	stdout, err := e.simweb.StdoutPipe()
	if err != nil {
		return nil, err
	}
	e.simweb.Stderr = os.Stderr
	t0 := time.Now()
	if err := e.simweb.Start(); err != nil {
		return nil, err
	}
	addrc := make(chan string, 1)
	go func() {
		f, _ := os.Create(e.simOut)
		defer f.Close()
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`^serving \d+ hosts \S+ on (\S+)$`)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			if strings.HasPrefix(line, "simweb seed") {
				e.shapeLine = line
			}
			if m := re.FindStringSubmatch(line); m != nil && !sent {
				addrc <- m[1]
				sent = true
			}
		}
		if !sent {
			close(addrc)
		}
	}()

	if err := e.computeOracle(o); err != nil {
		e.close()
		return nil, err
	}
	logf("oracle: %d URLs (%v)", e.oracle.Size(), time.Since(t0).Round(time.Millisecond))
	select {
	case a, ok := <-addrc:
		if !ok {
			e.close()
			return nil, fmt.Errorf("simweb exited without serving; see %s", e.simOut)
		}
		e.addr = a
	case <-ctx.Done():
		e.close()
		return nil, ctx.Err()
	case <-time.After(15 * time.Minute):
		e.close()
		return nil, errors.New("simweb did not start serving within 15 minutes")
	}
	e.describeT = time.Since(t0)
	// The served web must be the one the oracle was computed for.
	if want := fmt.Sprintf("the oracle fetches %d URLs", e.oracle.Size()); !strings.Contains(e.shapeLine, want) {
		e.close()
		return nil, fmt.Errorf("simweb process describes %q, but the harness's oracle has %d URLs: not the same web", e.shapeLine, e.oracle.Size())
	}
	if len(e.oracle.TrapHosts) > 0 {
		e.close()
		return nil, fmt.Errorf("the web has %d trap hosts; the comparison assumes none (--no-pathologies)", len(e.oracle.TrapHosts))
	}
	logf("simweb: serving on %s (up after %v)", e.addr, e.describeT.Round(time.Millisecond))

	e.seeds = filepath.Join(sub, "seeds.txt")
	if err := os.WriteFile(e.seeds, []byte(strings.Join(e.web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		e.close()
		return nil, err
	}
	e.urls = filepath.Join(sub, "urls.txt")
	if err := os.WriteFile(e.urls, []byte(strings.Join(e.oracle.Fetched, "\n")+"\n"), 0o644); err != nil {
		e.close()
		return nil, err
	}
	e.pki = filepath.Join(sub, "pki")
	os.RemoveAll(e.pki)
	if out, err := exec.CommandContext(ctx, bins.crawler, "certs", "--nodes", "3", "--out", e.pki).CombinedOutput(); err != nil {
		e.close()
		return nil, fmt.Errorf("crawler certs: %w\n%s", err, out)
	}
	return e, nil
}

// computeOracle builds the same web as the simweb process, in-process, and
// its oracle.
func (e *env) computeOracle(o options) (err error) {
	cfg := simweb.DefaultConfig()
	cfg.Hosts = o.hosts
	cfg.PagesPerHost = float64(o.pages) / float64(o.hosts)
	cfg.NoPathologies = true
	// A link-only web (the other crawlers read no sitemaps); Sextant runs
	// with --sitemaps off.
	cfg.SitemapShare = 0
	if !e.https {
		cfg.HTTPSShare, cfg.RedirectHTTPSShare, cfg.H2Share, cfg.HSTSShare = 0, 0, 0, 0
	}
	if e.web, err = simweb.New(cfg); err != nil {
		return err
	}
	if e.oracle, err = e.web.Oracle(e.web.Seeds(), simweb.Rules{}); err != nil {
		return err
	}
	e.oset = make(map[string]struct{}, len(e.oracle.Fetched))
	for _, u := range e.oracle.Fetched {
		e.oset[u] = struct{}{}
	}
	return nil
}

func (e *env) describe() string {
	if e.https {
		n := 0
		for i := range e.web.NumHosts() {
			if e.web.Scheme(i).HTTPS {
				n++
			}
		}
		h2 := 0
		for i := range e.web.NumHosts() {
			if e.web.Scheme(i).H2 {
				h2++
			}
		}
		return fmt.Sprintf("%d hosts (%d HTTPS, %d of them offering h2), %d URLs in the oracle's set, %d seeds, no pathologies, no latency (`crawler simweb --hosts %d --pages %d --no-latency --no-pathologies`)",
			e.web.NumHosts(), n, h2, e.oracle.Size(), len(e.web.Seeds()), e.web.NumHosts(), pagesFlag(e))
	}
	return fmt.Sprintf("%d hosts, %d URLs in the oracle's set, %d seeds, no pathologies, no latency (`crawler simweb --hosts %d --pages %d --no-latency --no-pathologies --plain`)",
		e.web.NumHosts(), e.oracle.Size(), len(e.web.Seeds()), e.web.NumHosts(), pagesFlag(e))
}

func pagesFlag(e *env) int { return int(e.web.Config().PagesPerHost*float64(e.web.NumHosts()) + 0.5) }

func (e *env) close() {
	if e.tls != nil {
		e.tls.close()
	}
	if e.simweb != nil && e.simweb.Process != nil {
		_ = e.simweb.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = e.simweb.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = e.simweb.Process.Kill()
			<-done
		}
	}
}

// serverCPU is the simweb process's CPU time so far, so that a run's
// server-side cost can be reported too.
func (e *env) serverCPU() float64 { return procstat.CPU(e.simweb.Process.Pid) }

// onWeb reports whether u is on one of the web's hosts (the resolver
// override also sends the web's deliberately unresolvable host to simweb).
func (e *env) onWeb(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	_, ok := e.web.HostIndex(pu.Hostname())
	return ok
}

// normURL is u as the oracle writes it (WHATWG, no fragment): Scrapy and
// wget2 log URLs as written in the page (http://h:80/x, /d/%2e/p), the
// same URL as the oracle's http://h/x and /d/p.
func normURL(u string) string {
	pu, err := whatwg.Parse(u)
	if err != nil {
		return u
	}
	return pu.Href(true)
}

// check fills the completeness fields of r from r.fetched.
func (e *env) check(r *result) {
	if r.Err != "" && len(r.fetched) == 0 {
		return
	}
	seen := make(map[string]int, len(r.fetched))
	for _, u := range r.fetched {
		u = normURL(u)
		if !e.onWeb(u) {
			r.OffWeb++
			continue
		}
		seen[u]++
	}
	r.Pages = len(r.fetched)
	r.Distinct = len(seen)
	for u, n := range seen {
		if n > 1 {
			r.FetchedTwice++
		}
		if _, ok := e.oset[u]; !ok {
			r.Extra++
			if len(r.ExtraEx) < 3 {
				r.ExtraEx = append(r.ExtraEx, u)
			}
		}
	}
	for _, u := range e.oracle.Fetched {
		if _, ok := seen[u]; !ok {
			r.Missing++
			if len(r.MissingEx) < 3 {
				r.MissingEx = append(r.MissingEx, u)
			}
		}
	}
	r.OracleSize = e.oracle.Size()
	r.fetched = nil
}

// revision names the code measured: the commit of the repository and
// whether its working tree had uncommitted changes to tracked files.
func revision(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	rev := "commit " + strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		rev += fmt.Sprintf(" plus uncommitted changes to %d tracked files", len(strings.Split(strings.TrimSpace(string(st)), "\n")))
	}
	return rev
}

// rootEnv is the environment of go commands run in the repository's own
// module: a GOFLAGS meant for the bench module (-modfile=…) must not leak
// into it.
func rootEnv() []string { return append(os.Environ(), "GOFLAGS=") }

func machineInfo() string {
	cpu := procstat.CPUModel()
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				mem = fmt.Sprintf("%.1f GiB RAM", kb/(1<<20))
			}
		}
	}
	gov := runtime.Version()
	if out, err := exec.Command("go", "version").Output(); err == nil {
		gov = strings.TrimSpace(strings.TrimPrefix(string(out), "go version "))
	}
	return fmt.Sprintf("%d cores (%s), %s, %s", runtime.NumCPU(), cpu, mem, gov)
}

func loadAvg() string {
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

// freeAddr is a free loopback port in nsCur (where the contenders listen).
func freeAddr() (a string, err error) {
	err = nsCur.do(func() error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		a = l.Addr().String()
		return l.Close()
	})
	return a, err
}
