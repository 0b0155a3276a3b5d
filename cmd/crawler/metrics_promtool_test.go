package main

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// checkPromtool scrapes addr's /metrics and runs it through `promtool check
// metrics` (Debian's prometheus package, installed by .ci/run): the
// exposition must parse and pass Prometheus' naming and help lint. A
// missing promtool fails: the check is part of CI.
func checkPromtool(t *testing.T, addr string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (apt-get install prometheus; .ci/run installs it): %v", err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v %v", resp.Status, err)
	}
	if !bytes.Contains(body, []byte("sextant_build_info{")) || !bytes.Contains(body, []byte("sextant_fetches_total{")) {
		t.Fatalf("/metrics lacks the node's series:\n%.2000s", body)
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics on %s: %v\n%s", addr, err, strings.TrimSpace(string(out)))
	}
}

// promtool must refuse what it should: a counter without _total and with
// no help, so that a passing check means something.
func TestPromtoolRefusesBadMetrics(t *testing.T) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (apt-get install prometheus; .ci/run installs it): %v", err)
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader("# TYPE sextant_fetches counter\nsextant_fetches 3\n")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("promtool accepted a counter without _total or help:\n%s", out)
	}
}
