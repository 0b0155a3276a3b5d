package onehost

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/internal/realweb"
)

// runLoops runs the round's loop over urls (and the h2 one, with
// o.LoopH2) into r.
func runLoops(ctx context.Context, o Options, urls []string, addr interface{ String() string }, n *realweb.Nginx, r *Round) error {
	var sp *spans
	if o.Spans {
		sp = &spans{}
	}
	var err error
	r.LoopPages, r.LoopSeconds, err = fetchLoop(ctx, urls, addr, n, sp, false)
	if sp != nil {
		s, c, _ := sp.result()
		r.LoopServer, r.LoopClient = s.Seconds(), c.Seconds()
	}
	if err == nil && o.LoopH2 {
		r.LoopH2Pages, r.LoopH2Seconds, err = fetchLoop(ctx, urls, addr, n, nil, true)
	}
	return err
}

// fetchLoop fetches urls one after the other over one kept-alive
// connection (net/http, the same TLS roots and address as the crawl),
// reading each body to its end: the one-host ceiling. It speaks
// HTTP/1.1, or h2 if h2 is set and the server offers it over TLS.
func fetchLoop(ctx context.Context, urls []string, addr interface{ String() string }, n *realweb.Nginx, sp *spans, h2 bool) (int, float64, error) {
	var d net.Dialer
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr.String())
	}
	if sp != nil {
		dial = sp.dialer(addr.String())
	}
	tr := &http.Transport{
		DialContext:         dial,
		TLSClientConfig:     &tls.Config{RootCAs: n.RootCAs},
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		ForceAttemptHTTP2:   h2, // net/http speaks HTTP/1.1 over a custom dialer unless asked
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start := time.Now()
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, 0, err
		}
		req.Header.Set("User-Agent", fetcher.DefaultUserAgent)
		resp, err := c.Do(req)
		if err != nil {
			return 0, 0, fmt.Errorf("onehost: loop: %w", err)
		}
		if h2 && resp.ProtoMajor != 2 {
			resp.Body.Close()
			return 0, 0, fmt.Errorf("onehost: h2 loop: %s answered over %s", u, resp.Proto)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, 0, fmt.Errorf("onehost: loop: %s: %w", u, err)
		}
	}
	return len(urls), time.Since(start).Seconds(), nil
}
