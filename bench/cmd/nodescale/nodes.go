package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/harness"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
)

// node is one running `crawler node` process.
type node struct {
	id, ns, config string
	cg             *cgroup
	proc           *harness.Proc
	stdout         string
	perf           *perfRec
	nft0           nftCount // its namespace's gRPC bytes and packets sent before the run
}

// metricsAddr is where every node serves /metrics: its own namespace's
// loopback, so that scraping puts nothing on the shaped links.
const metricsAddr = "127.0.0.1:9100"

func nodeID(i int) string { return "node-" + strconv.Itoa(i) }

// writeConfigs writes the node configuration files of an n-node cluster.
func writeConfigs(o options, w *web, pki, dir string, n int) ([]string, error) {
	members := make([]nodeconfig.Member, n)
	for i := range n {
		members[i] = nodeconfig.Member{ID: nodeID(i), Addr: net.JoinHostPort(nodeIP(i), strconv.Itoa(grpcPort))}
	}
	zero := nodeconfig.Duration(0)
	var files []string
	for i := range n {
		id := nodeID(i)
		c := nodeconfig.Config{
			ID: id, Listen: members[i].Addr, Members: members,
			DataDir: filepath.Join(dir, id),
			TLS: nodeconfig.TLS{CA: filepath.Join(pki, "ca.pem"), Cert: filepath.Join(pki, id+".pem"),
				Key: filepath.Join(pki, id+"-key.pem")},
			Workers:      o.workers,
			Politeness:   nodeconfig.Politeness{MinDelay: &zero},
			AllowPrivate: true, Resolve: map[string]string{w.web.Domain(): w.addr},
			Scope: "suffixes", Suffixes: []string{w.web.Domain()},
			SeedsFile: w.seeds, MetricsListen: metricsAddr,
		}
		b, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return nil, err
		}
		f := filepath.Join(dir, id+".json")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// startNode starts a node in its namespace and cgroup: a shell joins the
// group, then execs `ip netns exec`, which execs the crawler (one pid).
func startNode(crawler string, nd *node) error {
	script := nd.cg.joinScript() + "exec \"$@\""
	bin, argv := harness.NetnsCommand(nd.ns, crawler, "node", "--config", nd.config)
	p, err := harness.Start(exec.Command("sh", append([]string{"-c", script, "sh", bin}, argv...)...), nd.stdout)
	if err != nil {
		return err
	}
	nd.proc = p
	return waitExec(p, crawler)
}

// waitExec waits until p runs the crawler binary (after the shell's and
// ip's execs), so that a profiler attached next sees the node from its
// start.
func waitExec(p *harness.Proc, crawler string) error {
	want, err := filepath.EvalSymlinks(crawler)
	if err != nil {
		return err
	}
	pid := p.Cmd.Process.Pid
	for range 2000 {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == want {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("node exited at start: %v", p.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return fmt.Errorf("pid %d never ran %s", pid, crawler)
}

// stop sends SIGTERM and waits (SIGKILL to the group after 30 s).
func (nd *node) stop() error {
	if nd.proc == nil {
		return nil
	}
	if err := nd.proc.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		return fmt.Errorf("%s: %w", nd.id, err)
	}
	return nil
}

// metrics scrapes the node's /metrics inside its namespace.
func (nd *node) metrics(ctx context.Context) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return harness.DialIn(ctx, nd.ns, network, addr)
		},
		DisableKeepAlives: true,
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// waitTerminated polls every node's /metrics until it reports the crawl's
// termination; a node that exits first, or the timeout, is an error.
func waitTerminated(ctx context.Context, nodes []*node, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, nd := range nodes {
		want := fmt.Sprintf("sextant_crawl_terminated{node=%q} 1", nd.id)
		for {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: no termination within %v (see %s)", nd.id, timeout, nd.stdout)
			}
			select {
			case <-nd.proc.Done():
				err := nd.proc.Err()
				out, _ := os.ReadFile(nd.stdout)
				return fmt.Errorf("%s exited before the crawl terminated (%v): %s", nd.id, err, tail(string(out), 1500))
			default:
			}
			if t, err := nd.metrics(ctx); err == nil && strings.Contains(t, want) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
