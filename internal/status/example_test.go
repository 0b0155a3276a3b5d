package status_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/cache/tracegen"
	"github.com/sextant-crawler/sextant/internal/mrc"
	"github.com/sextant-crawler/sextant/internal/status"
)

// Example wires a cache, its live miss-ratio curve and the status page the
// way a node does: Observe next to every Seen, curves and advice in the
// Snapshot, the handler on a loopback listener.
func Example() {
	c := cache.NewClock(1024)
	est, err := mrc.NewShared(mrc.Economy)
	if err != nil {
		panic(err)
	}
	var lookups, hits uint64
	g, _ := tracegen.New(tracegen.Options{Universe: 1 << 12})
	for i := 0; i < 100000; i++ { // the worker's hot path
		fp := g.Next()
		est.Observe(fp)
		lookups++
		if c.Seen(fp) {
			hits++
		}
	}
	src := status.SourceFunc(func() status.Snapshot {
		curves := est.Curves()
		adv := mrc.MakeAdvice(curves[mrc.CLOCK], 1024, 1, 5000) // the policy in use
		return status.Snapshot{
			Node: "node1", Time: time.Now(), Pages: 42,
			Caches: []status.Cache{{Name: "due-front", Size: 1024, Lookups: lookups, Hits: hits,
				Curves: curves, Advice: &adv}},
		}
	})
	h, err := status.New(status.Options{Source: src})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }() // owned: waited for below

	ln, err := net.Listen("tcp", "127.0.0.1:0") // loopback by default
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/status/", http.StripPrefix("/status", h))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)

	resp, err := http.Get("http://" + ln.Addr().String() + "/status/status.json")
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	resp.Body.Close()

	srv.Close()
	cancel()
	<-done
	// Output: 200 OK application/json
}
