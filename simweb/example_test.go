package simweb_test

import (
	"fmt"
	"io"

	"github.com/sextant-crawler/sextant/simweb"
)

// A crawler test serves a web, crawls it through the server's DialContext
// and compares what it fetched with the oracle.
func Example() {
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		panic(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLatency: true})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	client := srv.Client() // or: http.Transport{DialContext: srv.DialContext}
	resp, err := client.Get(web.Seeds()[0])
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))

	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{})
	if err != nil {
		panic(err)
	}
	// A crawl that fetched only the seeds misses most of the web.
	err = oracle.Check(web.Seeds())
	fmt.Println(err != nil, oracle.Size() > 2000, len(oracle.TrapHosts))
	// Output:
	// 200 OK text/html; charset=utf-8
	// true true 1
}
