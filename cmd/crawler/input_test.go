package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Values that were accepted (or replaced by a default) are usage errors:
// exit 2, one line naming the flag. --max-fetches 1 bounds the crawl that
// the old code started.
func TestCrawlRefusesBadValues(t *testing.T) {
	dir := t.TempDir()
	base := []string{"crawl", "--simweb", "small", "--data", dir, "--max-fetches", "1", "--progress", "0"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--factor", "NaN"}, "--factor"},
		{[]string{"--factor", "+Inf"}, "--factor"},
		{[]string{"--due-flush", "-1s"}, "--due-flush"},
		{[]string{"--min-delay", "-1s"}, "--min-delay"},
		{[]string{"--fetch-timeout", "-1s"}, "--fetch-timeout"},
		{[]string{"--max-url-length", "-1"}, "--max-url-length"},
		{[]string{"--workers", "0"}, "--workers"},
		{[]string{"--workers", "100000"}, "--workers"},
		{[]string{"--suffix", ""}, "suffix"},
	} {
		code, _, errOut := runCLI(t, append(base, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line naming %s", tc.args, code, errOut, tc.want)
		}
	}
}

// A node config the node's own validation refuses is a usage error too.
func TestNodeRefusesBadValues(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "node.json")
	cfg := `{"id":"a","members":[{"id":"a","addr":"127.0.0.1:1"}],"data_dir":"d","tls":{"ca":"c","cert":"c","key":"k"},"seeds":["http://a.test/"],"workers":100000}`
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "node", "--config", p)
	if code != 2 || !strings.Contains(errOut, "workers 100000") {
		t.Fatalf("exit %d, stderr %q; want 2 naming workers", code, errOut)
	}
}

// trickyServer is a loopback HTTP/1.1 server whose responses carry
// terminal control sequences: ESC in a status text, raw 8-bit CSI bytes
// (0x9b, legal obs-text) in Content-Type and Location, and ESC in a header
// (which net/http refuses, so its error text carries it). It is closed, and
// its goroutines waited for, at the end of the test.
func trickyServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	serve := func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		reqLine, err := br.ReadString('\n')
		if err != nil {
			return
		}
		for { // the request's headers
			l, err := br.ReadString('\n')
			if err != nil || l == "\r\n" {
				break
			}
		}
		path := strings.Fields(reqLine + " /")[1]
		var resp string
		switch path {
		case "/":
			body := `<html><a href="/r">r</a> <a href="/bad">bad</a></html>`
			resp = "HTTP/1.1 200 O\x1b[2JK\r\nContent-Type: text/html; x=\x9b31m\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
		case "/r":
			resp = "HTTP/1.1 302 Fo\x1b]0;pwned\x07und\r\nLocation: /x\x9b[2J\r\nContent-Length: 0\r\n\r\n"
		case "/bad":
			resp = "HTTP/1.1 200 OK\r\nX-Evil: \x1b[31mred\r\nContent-Length: 0\r\n\r\n"
		default:
			resp = "HTTP/1.1 404 Not \x1b[5mFound\r\nContent-Length: 0\r\n\r\n"
		}
		_, _ = c.Write([]byte(resp))
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); serve(c) }()
		}
	}()
	return ln.Addr().String()
}

func itoa(n int) string { return strconv.Itoa(n) }

// Bad seeds are reported (count, line numbers, escaped text) on the
// crawl's start output and as a slog warning, and the crawl goes on from
// the good one; nothing a seed or the server sent reaches the terminal
// unescaped.
func TestCrawlBadSeedsAndControlCharacters(t *testing.T) {
	addr := trickyServer(t)
	dir := t.TempDir()
	seeds := filepath.Join(dir, "seeds.txt")
	in := "http://" + addr + "/\ngopher://\x1b[31mevil.test/\nftp://x.test/\n" + strings.Repeat("a", 70_000) + "\n"
	if err := os.WriteFile(seeds, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "crawl", "--seeds", seeds, "--data", filepath.Join(dir, "data"), "--allow-private",
		"--min-delay", "0", "--failure-backoff", "10ms", "--workers", "2", "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{"3 seed lines skipped", "line 2", `\x1b[31m`, "line 3", "line 4: longer than"} {
		if !strings.Contains(out, want) {
			t.Errorf("start output lacks %q:\n%s", want, out)
		}
		if !strings.Contains(errOut, want) {
			t.Errorf("slog warning lacks %q:\n%s", want, errOut)
		}
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if !strings.Contains(errOut, "level=WARN") {
		t.Errorf("no slog warning on stderr: %q", errOut)
	}
	if !strings.Contains(out, "fetches         ") || strings.Contains(out, "fetches         0:") {
		t.Errorf("the good seed was not crawled:\n%s", out)
	}
	for name, s := range map[string]string{"stdout": out, "stderr": errOut} {
		if strings.ContainsAny(s, "\x1b\x07") || strings.Contains(s, "\x9b") || strings.Contains(s, "\u009b") {
			t.Errorf("%s holds a raw control sequence: %q", name, s)
		}
	}

	// No valid seed at all: a usage error naming the lines.
	none := filepath.Join(dir, "none.txt")
	if err := os.WriteFile(none, []byte("ftp://x.test/\n\x1b[2J\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "crawl", "--seeds", none, "--data", filepath.Join(dir, "d2"), "--progress", "0")
	if code != 2 || !strings.Contains(errOut, "no valid seed") || !strings.Contains(errOut, "line 2") || strings.Contains(errOut, "\x1b") {
		t.Fatalf("no valid seed: exit %d, stderr %q; want 2, the lines, nothing raw", code, errOut)
	}
}

// The other commands' duration flags refuse negative values too (the old
// demo panicked in time.NewTicker on --progress -1s).
func TestOtherCommandsRefuseNegativeDurations(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "show", "--pki", dir, "--peer", "127.0.0.1:1", "--timeout", "-1s"}, "--timeout"},
		{[]string{"demo", "--progress", "-1s", "--status", "off", "--hosts", "20", "--no-pathologies"}, "--progress"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming %s", tc.args, code, errOut, tc.want)
		}
	}
}
