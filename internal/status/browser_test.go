package status

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"net/http/httptest"

	"github.com/sextant-crawler/sextant/internal/mrc"
)

// chromium finds the headless browser (Debian's chromium package).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("SEXTANT_BROWSER=1 but no chromium installed (apt-get install chromium)")
	return ""
}

func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=8000"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// TestBrowser loads the page in headless Chromium against a live handler
// whose numbers change on every poll, and checks the rendered DOM: the
// charts have paths, the KPIs show live numbers, the cache card shows the
// curves; it saves a screenshot (path logged; SEXTANT_SCREENSHOT to choose
// it). Gated by SEXTANT_BROWSER=1.
func TestBrowser(t *testing.T) {
	if os.Getenv("SEXTANT_BROWSER") != "1" {
		t.Skip("set SEXTANT_BROWSER=1 to drive headless Chromium")
	}
	bin := chromium(t)
	var polls atomic.Int64
	curve := []mrc.Point{{K: 1, MissRatio: 0.95}, {K: 16, MissRatio: 0.6}, {K: 256, MissRatio: 0.3},
		{K: 4096, MissRatio: 0.2}, {K: 65536, MissRatio: 0.18}}
	adv := mrc.MakeAdvice(curve, 512, 2, 3000)
	start := time.Now()
	src := SourceFunc(func() Snapshot {
		n := polls.Add(1)
		return Snapshot{
			Node: "node-browser", Pages: uint64(100000 + 777*n), Frontier: 5000 - 10*n, DUE: 20000 + 500*n,
			Uptime:   time.Since(start).Seconds(),
			Outcomes: map[string]uint64{"2xx": uint64(900 + n), "4xx": 40, "robots": 12, "error": 3},
			Caches: []Cache{{Name: "due-front", Size: 512, Lookups: uint64(100 * n), Hits: uint64(61 * n),
				Curves: map[string][]mrc.Point{mrc.LRU: curve, mrc.CLOCK: curve}, Advice: &adv}},
			Peers:   []Peer{{ID: "node2", Up: true, SentURLs: uint64(50 * n), Spool: 0}, {ID: "node3", Up: false, Spool: 321}},
			Busiest: []Host{{Host: "h00001.sim.test", Fetches: uint64(10 * n), Queued: 30}},
			Delayed: []Host{{Host: "slow.sim.test", DelayMS: 2500, Queued: 4}},
		}
	})
	h, err := New(Options{Source: src, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h) // 127.0.0.1
	defer srv.Close()

	dom := runChromium(t, bin, "--dump-dom", srv.URL+"/")
	if polls.Load() == 0 {
		t.Fatal("the browser never polled status.json")
	}
	m := regexp.MustCompile(`data-polls="(\d+)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("no successful poll rendered:\n%.3000s", dom)
	}
	if n, _ := strconv.Atoi(string(m[1])); n < 1 {
		t.Fatalf("data-polls %s", m[1])
	}
	for _, re := range []string{
		`id="pages">[0-9.]+k<`,                        // live page count
		`<path d="M[0-9.]+,[0-9.]+L[^"]+"[^>]*series`, // a chart line with at least two points
		`class="mrc"`, `due-front — size 512/worker`, `hit rate 61.0%`,
		`node3</td><td>NO</td>`, `slow.sim.test`, `<rect[^>]*class="bar"`,
	} {
		if !regexp.MustCompile(re).Match(dom) {
			t.Errorf("rendered DOM lacks %s", re)
		}
	}
	shot := os.Getenv("SEXTANT_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(os.TempDir(), "sextant-status.png")
	}
	runChromium(t, bin, "--window-size=1400,1600", "--screenshot="+shot, srv.URL+"/")
	png, err := os.ReadFile(shot)
	if err != nil || len(png) < 10000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("screenshot saved: %s (%d bytes); %d polls served", shot, len(png), polls.Load())
}
