package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/simweb"
)

// crawler simweb --ca-out writes the CA its HTTPS hosts' certificate chains
// to; a client trusting only that file gets the home page of an HTTPS host
// over TLS on the printed port; an unwritable --ca-out is an error.
func TestSimwebCAOut(t *testing.T) {
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	var host string
	for i := range web.NumHosts() {
		if s := web.Scheme(i); s.HTTPS && !s.Plain {
			host = web.HostName(i)
			break
		}
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuf
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"simweb", "--preset", "small", "--no-latency", "--ca-out", ca}, &out, &errOut)
	}()
	re := regexp.MustCompile(`serving \d+ hosts \S+ on (\S+)`)
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("simweb did not say where it serves: %q %q", out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "CA certificate written to "+ca) {
		t.Errorf("no word of the CA file: %q", out.String())
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("--ca-out %s holds no PEM certificate", ca)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + host + "/")
	if err != nil {
		t.Fatalf("https://%s/ on %s: %v", host, addr, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("https://%s/: %s", host, resp.Status)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
	if code, _, errOut := runCLI(t, "simweb", "--ca-out", filepath.Join(t.TempDir(), "no", "such", "dir", "ca.pem"), "--preset", "small"); code == 0 {
		t.Errorf("an unwritable --ca-out exits 0: %s", errOut)
	}
}

// --preset scale serves simweb.ScaleConfig (no pathologies, whatever
// --no-pathologies says) and --shape=false skips the oracle walk.
func TestSimwebScalePreset(t *testing.T) {
	cfg := simweb.ScaleConfig()
	cfg.Hosts = 60
	web, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuf
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"simweb", "--preset", "scale", "--hosts", "60", "--shape=false", "--no-latency"}, &out, &errOut)
	}()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "serving ") && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
	want := "simweb seed 29: 60 hosts, " + strconv.FormatInt(web.Pages(), 10) + " articles (shape not computed: --shape=false)"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "serving 60 hosts") {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}
