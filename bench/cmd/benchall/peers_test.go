package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/simweb"
)

func TestReadWget2Sites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sites.csv")
	csv := "ID,ParentID,URL,Status,Link,Method,Size,SizeDecompressed,TransferTime,ResponseTime,Encoding,Verification\n" +
		"1,0,http://h00000.sim.test/robots.txt,200,1,1,87,87,9,8,0,0\n" +
		"2,0,http://h00000.sim.test/,200,1,1,63364,63364,5,5,0,0\n" +
		"3,2,http://h00000.sim.test/d0/p7.html,404,1,1,10,10,1,1,0,0\n" +
		"4,2,http://h00000.sim.test/robots.txt?x=1,200,1,1,10,10,1,1,0,0\n" +
		"5,2,http://h00001.sim.test/x,0,1,1,0,0,0,0,0,0\n"
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readWget2Sites(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://h00000.sim.test/", "http://h00000.sim.test/d0/p7.html", "http://h00000.sim.test/robots.txt?x=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// tinyEnv is a web of 4 hosts and its oracle, with no simweb process.
func tinyEnv(t *testing.T) *env {
	t.Helper()
	cfg := simweb.DefaultConfig()
	cfg.Hosts, cfg.PagesPerHost, cfg.NoPathologies, cfg.SitemapShare = 4, 10, true, 0
	cfg.HTTPSShare, cfg.RedirectHTTPSShare, cfg.H2Share, cfg.HSTSShare = 0, 0, 0, 0
	w, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{web: w}
	if e.oracle, err = w.Oracle(w.Seeds(), simweb.Rules{}); err != nil {
		t.Fatal(err)
	}
	e.oset = map[string]struct{}{}
	for _, u := range e.oracle.Fetched {
		e.oset[u] = struct{}{}
	}
	return e
}

// TestCheckNormalizes: a URL logged as written in a page (explicit port 80,
// upper-case host, a fragment, a %2e segment) is the oracle's URL fetched
// again, not an extra one; a host off the web is counted apart.
func TestCheckNormalizes(t *testing.T) {
	e := tinyEnv(t)
	seed := e.web.Seeds()[0] // http://h00000.sim.test/
	fetched := append([]string(nil), e.oracle.Fetched...)
	fetched = append(fetched,
		strings.Replace(seed, ".sim.test/", ".sim.test:80/", 1),
		strings.ToUpper(seed[:7])+strings.ToUpper(seed[7:len(seed)-1])+"/#top",
		seed+"%2e/",
		"http://nohost.sim.test/")
	r := result{fetched: fetched}
	e.check(&r)
	if r.Missing != 0 || r.Extra != 0 || r.OffWeb != 1 || r.FetchedTwice != 1 || r.Distinct != e.oracle.Size() {
		t.Errorf("missing %d extra %d (%v) off-web %d twice %d distinct %d (oracle %d); want 0 0 1 1 %d",
			r.Missing, r.Extra, r.ExtraEx, r.OffWeb, r.FetchedTwice, r.Distinct, e.oracle.Size(), e.oracle.Size())
	}
	r = result{fetched: e.oracle.Fetched[1:]}
	e.check(&r)
	if r.Missing != 1 || r.FetchedTwice != 0 {
		t.Errorf("one URL left out: missing %d twice %d, want 1 0", r.Missing, r.FetchedTwice)
	}
}

// TestNetns makes the benchmark's namespace: its /etc/hosts names the
// web's hosts, any other name fails at once, and a port opened inside it
// (netns.do) is reached from inside only.
func TestNetns(t *testing.T) {
	ns, err := setupNetns(fmt.Sprintf("sextant-bench-test-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err) // root and iproute2 are needed: CI runs as root
	}
	defer ns.close()
	if err := ns.writeHosts([]string{"h00000.sim.test", "h00001.sim.test"}); err != nil {
		t.Fatal(err)
	}
	bin, args := ns.command("getent", "hosts", "h00001.sim.test")
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "127.0.0.1") {
		t.Errorf("h00001.sim.test in the namespace: %q, %v", out, err)
	}
	t0 := time.Now()
	bin, args = ns.command("getent", "hosts", "nohost.sim.test")
	if out, err := exec.Command(bin, args...).CombinedOutput(); err == nil {
		t.Errorf("nohost.sim.test resolved in the namespace: %q", out)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("an unknown name took %v to fail", d)
	}
	var l net.Listener
	if err := ns.do(func() (err error) { l, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if c, err := net.DialTimeout("tcp", l.Addr().String(), 2*time.Second); err == nil {
		c.Close()
		t.Errorf("%s inside the namespace reached from outside", l.Addr())
	}
	if err := ns.do(func() error {
		c, err := net.DialTimeout("tcp", l.Addr().String(), 2*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		t.Errorf("dial inside the namespace: %v", err)
	}
}
