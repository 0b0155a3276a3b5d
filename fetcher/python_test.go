package fetcher

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pythonServer is Python's http.server as people run it (ThreadingHTTPServer,
// HTTP/1.1, Content-Length from SimpleHTTPRequestHandler). It writes the
// header and the body in two writes without TCP_NODELAY, so under Nagle the
// body waits for the client to ACK the header. It prints its port, then one
// "conn PORT" line per accepted connection on stderr.
const pythonServer = `
import sys, http.server, functools
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def setup(self):
        super().setup()
        sys.stderr.write("conn %d\n" % self.client_address[1]); sys.stderr.flush()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(H, directory=sys.argv[1]))
print(s.server_address[1], flush=True)
s.serve_forever()
`

// startPython serves dir with pythonServer until the test ends and returns
// its base URL and a function returning the connections it accepted.
func startPython(t *testing.T, dir string) (string, func() int) {
	t.Helper()
	const python = "/usr/bin/python3" // Debian's; .ci/run installs it
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("this test needs %s (apt-get install python3): %v", python, err)
	}
	logPath := filepath.Join(t.TempDir(), "conns.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(python, "-c", pythonServer, dir)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	port := make(chan string, 1)
	go func() { // ends when the process's stdout closes (Kill)
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			port <- strings.TrimSpace(sc.Text())
		}
		close(port)
		for sc.Scan() {
		}
	}()
	select {
	case p, ok := <-port:
		if !ok {
			t.Fatal("python server printed no port")
		}
		conns := func() int {
			b, _ := os.ReadFile(logPath)
			return strings.Count(string(b), "conn ")
		}
		return "http://127.0.0.1:" + p, conns
	case <-time.After(30 * time.Second):
		t.Fatal("python server did not start in 30 s")
	}
	return "", nil
}

// TestPythonHTTPServerNoDelayedACK: fetching 40 pages one after another
// from Python's http.server, as a one-host crawl does, reuses one
// connection and no fetch waits for the client's delayed-ACK timer (≥ 40 ms
// on Linux, TCP_DELACK_MIN). Before quickAck every fetch did (≈ 44 ms each,
// 40 of 40), and a crawl's politeness delay of Factor × duration turned
// that into 0.48 s per page (4 pages/s). The count of fetches at the timer
// floor is the structural check (a few may be slow on a loaded machine;
// the old code had all of them there); the 15 s bound only catches a hang.
func TestPythonHTTPServerNoDelayedACK(t *testing.T) {
	dir := t.TempDir()
	const pages = 40
	for i := range pages {
		body := fmt.Sprintf("<html><body><h1>page %d</h1><a href=\"p%d.html\">next</a>%s</body></html>\n",
			i, (i+1)%pages, strings.Repeat("filler text ", 150))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%d.html", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base, conns := startPython(t, dir)
	f := newTest(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	var atFloor []string
	for i := range pages {
		r, err := f.Fetch(ctx, fmt.Sprintf("%s/p%d.html", base, i))
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != 200 || r.Body.Len() < 1800 {
			t.Fatalf("p%d: status %d, %d bytes", i, r.Status, r.Body.Len())
		}
		if r.Duration >= 40*time.Millisecond {
			atFloor = append(atFloor, fmt.Sprintf("p%d %v", i, r.Duration.Round(time.Millisecond)))
		}
		r.Close()
	}
	total := time.Since(start)
	if len(atFloor) > pages/4 {
		t.Errorf("%d of %d fetches took ≥ 40 ms (the delayed-ACK floor): %v", len(atFloor), pages, atFloor)
	}
	if n := conns(); n != 1 {
		t.Errorf("the server accepted %d connections for %d sequential fetches, want 1 (keep-alive)", n, pages)
	}
	if total > 15*time.Second {
		t.Errorf("%d fetches took %v", pages, total)
	}
	t.Logf("%d fetches in %v, %d at ≥ 40 ms", pages, total, len(atFloor))
}
