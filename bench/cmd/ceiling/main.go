// Command ceiling is the benchmark's machine ceiling: a bare
// fetch-and-tokenize loop over a known URL list, with no frontier, no
// deduplication, no robots.txt and no politeness beyond one connection per
// host. It is what any crawler on this machine, with this HTTP stack, can at
// best do on the same server.
//
// The URL list (one per line) is interleaved round-robin by host, so that
// with at most one connection per host the workers do not queue on one
// host; every host name is dialled at --connect (the simweb listener). Each
// response's URL and status is written to --log, one "STATUS URL" line per
// fetch; text/html bodies (up to 16 MiB) run through x/net/html's tokenizer,
// the same tokenizer Sextant's extractor uses. https URLs are fetched over
// TLS (h2 where offered), trusting --ca-file's CA: the TLS ceiling.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/html"
)

func main() {
	urlsFile := flag.String("urls", "", "file of URLs to fetch, one per line (required)")
	connect := flag.String("connect", "", "HOST:PORT every host name is dialled at (required)")
	workers := flag.Int("workers", 64, "fetching goroutines")
	logFile := flag.String("log", "", "write one 'STATUS URL' line per fetch here (required)")
	ua := flag.String("user-agent", "Sextant/0.1 (+https://github.com/sextant-crawler/sextant)", "User-Agent header")
	caFile := flag.String("ca-file", "", "PEM file of CA certificates to trust for https URLs besides the system roots")
	flag.Parse()
	if *urlsFile == "" || *connect == "" || *logFile == "" || *workers < 1 {
		fmt.Fprintln(os.Stderr, "usage: ceiling --urls FILE --connect HOST:PORT --log FILE [--workers N]")
		os.Exit(2)
	}
	tc, err := tlsConfig(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(2)
	}
	if err := run(*urlsFile, *connect, *logFile, *ua, *workers, tc); err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
}

// tlsConfig trusts the system roots and the certificates of caFile.
func tlsConfig(caFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate", caFile)
	}
	tc.RootCAs = pool
	return tc, nil
}

func run(urlsFile, connect, logFile, ua string, workers int, tc *tls.Config) error {
	urls, err := readInterleaved(urlsFile)
	if err != nil {
		return err
	}
	lf, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer lf.Close()
	var logMu sync.Mutex
	lw := bufio.NewWriterSize(lf, 1<<16)

	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, connect)
		},
		TLSClientConfig: tc,
		// h2 where a host offers it by ALPN: the best this stack can do
		// (still one connection per host).
		ForceAttemptHTTP2:   true,
		DisableCompression:  true,
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		// No bound across hosts: the round-robin order visits every other
		// host between two fetches of one, so a pool smaller than the
		// number of hosts closed each host's connection before its next
		// turn (a dial, over TLS a full handshake, per fetch).
		MaxIdleConns:    0,
		IdleConnTimeout: 30 * time.Second,
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(urls) {
					return
				}
				status, err := fetch(c, urls[i], ua)
				if err != nil {
					firstErr.CompareAndSwap(nil, err.Error())
					failed.Add(1)
					status = -1
				}
				logMu.Lock()
				fmt.Fprintf(lw, "%d %s\n", status, urls[i])
				logMu.Unlock()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := lw.Flush(); err != nil {
		return err
	}
	fmt.Printf("ceiling: %d URLs, %d failed, %v, %.0f pages/s\n", len(urls), failed.Load(), el.Round(time.Millisecond),
		float64(len(urls))/el.Seconds())
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d fetches failed, e.g. %v", f, firstErr.Load())
	}
	return nil
}

func fetch(c *http.Client, u, ua string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", ua)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/html") || strings.HasPrefix(ct, "application/xhtml+xml") {
		z := html.NewTokenizer(io.LimitReader(resp.Body, 16<<20))
		for z.Next() != html.ErrorToken {
			_, _ = z.TagName()
		}
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// readInterleaved reads the URL list and orders it round-robin by host:
// the first URL of every host, then the second of every host, and so on.
func readInterleaved(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byHost := map[string][]string{}
	var hosts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pu, err := url.Parse(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", line, err)
		}
		if _, ok := byHost[pu.Host]; !ok {
			hosts = append(hosts, pu.Host)
		}
		byHost[pu.Host] = append(byHost[pu.Host], line)
		n++
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		for _, h := range hosts {
			if l := byHost[h]; i < len(l) {
				out = append(out, l[i])
			}
		}
	}
	return out, nil
}
