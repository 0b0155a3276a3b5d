package main

import (
	"context"

	"github.com/sextant-crawler/sextant/simweb"
)

func init() {
	register(&command{name: "demo", summary: "build the default synthetic web, print its shape and serve it", run: runDemo})
}

func runDemo(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "demo", `[flags]

Builds the default synthetic web (simweb.DefaultConfig: about 300 hosts with
every pathology on a few of them), prints its shape — hosts, articles, the
oracle's reachable count, link statistics — and serves it on loopback until
interrupted. (Later issues turn this into a live multi-node crawl of it.)`)
	listen := f.String("listen", "127.0.0.1:0", "listen address of the synthetic web (loopback)")
	if err := f.parse(args); err != nil {
		return err
	}
	opts := simweb.Options{Listen: *listen, NoLog: true}
	if err := opts.Validate(); err != nil {
		return usagef("%v", err)
	}
	return serveWeb(ctx, env, simweb.DefaultConfig(), opts)
}
