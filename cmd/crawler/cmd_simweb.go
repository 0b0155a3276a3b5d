package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sextant-crawler/sextant/internal/termsafe"
	"github.com/sextant-crawler/sextant/simweb"
)

func init() {
	register(&command{name: "simweb", summary: "serve the synthetic web (or a directory of sites) on loopback", run: runSimweb})
}

func runSimweb(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "simweb", `[flags]

Serves a deterministic synthetic web on one loopback listener: hosts
h00000.sim.test, h00001.sim.test, … chosen by the Host header, over plain
HTTP and HTTPS on the same port (most hosts are HTTPS: their certificate
comes from a CA made at start; --ca-out writes it for crawl --ca-file). Prints the
address, the web's shape (hosts, articles, the oracle's reachable count,
link statistics) and how to reach it, then serves until interrupted.
With --dir it serves ROOT/<hostname>/… instead (static sites, one
sub-directory per host).`)
	preset := f.String("preset", "default", "base config: default (≈300 hosts, the demo's web), small (30 hosts, the tests' web) or scale (10⁵ hosts, ≈10⁷ URLs, plain HTTP, no pathologies: make scale's web)")
	shape := f.Bool("shape", true, "compute and print the web's shape (an in-memory oracle walk) before serving; --shape=false for big webs")
	seed := f.Uint64("seed", 0, "seed of the web (0: the preset's)")
	hosts := f.Int("hosts", 0, "number of hosts (0: the preset's)")
	pages := f.Int("pages", 0, "approximate number of articles in all (0: the preset's)")
	noPath := f.Bool("no-pathologies", false, "make every host well-behaved")
	plain := f.Bool("plain", false, "serve every host over plain HTTP only (no HTTPS hosts: the web before HTTPS)")
	hugeMax := f.Int64("huge-max", 0, "size of the largest huge page in bytes (0: the preset's)")
	dir := f.String("dir", "", "serve this directory of static sites instead of a synthetic web")
	listen := f.String("listen", "127.0.0.1:0", "listen address (must be loopback unless --allow-remote)")
	remote := f.Bool("allow-remote", false, "allow a non-loopback --listen address")
	noLatency := f.Bool("no-latency", false, "serve without the web's response latencies")
	caOut := f.String("ca-out", "", "write the PEM of the CA that signs the HTTPS hosts' certificate to this file (for crawl --ca-file)")
	if err := f.parse(args); err != nil {
		return err
	}
	opts := simweb.Options{Listen: *listen, AllowNonLoopback: *remote, NoLatency: *noLatency, NoLog: true}
	if err := opts.Validate(); err != nil {
		return usagef("%v", err)
	}
	if *dir != "" {
		set := false
		f.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "dir", "listen", "allow-remote", "no-latency":
			default:
				set = true
			}
		})
		if set {
			return usagef("--dir cannot be combined with synthetic-web flags")
		}
		srv, err := simweb.StartDir(*dir, opts)
		if err != nil {
			return err
		}
		if err := writeCA(env, srv, *caOut); err != nil {
			srv.Close()
			return err
		}
		// Host names are directory names: anything a file name may hold.
		fmt.Fprintf(env.stdout, "serving %d sites from %s on %s: %s\n", len(srv.DirHosts()), termsafe.String(*dir), srv.Addr(), termsafe.String(fmt.Sprint(srv.DirHosts())))
		if hs := srv.DirHosts(); len(hs) > 0 {
			printReach(env, srv.Addr(), hs[0], hs[0])
		}
		return serveUntilDone(ctx, env, srv)
	}
	var cfg simweb.Config
	switch *preset {
	case "default":
		cfg = simweb.DefaultConfig()
	case "small":
		cfg = simweb.SmallConfig()
	case "scale":
		cfg = simweb.ScaleConfig()
	default:
		return usagef("--preset %q: want default, small or scale", *preset)
	}
	if *seed != 0 {
		cfg.Seed = *seed
	}
	if *hosts < 0 || *pages < 0 || *hugeMax < 0 {
		return usagef("--hosts, --pages and --huge-max must not be negative")
	}
	if *hosts != 0 {
		cfg.Hosts = *hosts
	}
	if *pages != 0 {
		cfg.PagesPerHost = float64(*pages) / float64(cfg.Hosts)
	}
	if *hugeMax != 0 {
		cfg.HugeMax = *hugeMax
	}
	cfg.NoPathologies = cfg.NoPathologies || *noPath // the scale preset has none
	if *plain {
		cfg.HTTPSShare, cfg.RedirectHTTPSShare, cfg.H2Share, cfg.HSTSShare = 0, 0, 0, 0
	}
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	return serveWeb(ctx, env, cfg, opts, *caOut, *shape)
}

// writeCA writes the server's CA to path (if set) and says so.
func writeCA(env *cmdEnv, srv *simweb.Server, path string) error {
	if path == "" {
		return nil
	}
	// Written aside and renamed: a crawler reading the file as it appears
	// (a container sharing the directory) never sees half a certificate.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, srv.CAPEM(), 0o644); err != nil {
		return fmt.Errorf("--ca-out: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--ca-out: %w", err)
	}
	fmt.Fprintf(env.stdout, "CA certificate written to %s (crawl --ca-file %s)\n", termsafe.String(path), termsafe.String(path))
	return nil
}

// serveWeb builds the web of cfg, prints its shape and serves it until ctx
// is done.
func serveWeb(ctx context.Context, env *cmdEnv, cfg simweb.Config, opts simweb.Options, caOut string, shape bool) error {
	web, err := simweb.New(cfg)
	if err != nil {
		return err
	}
	start := time.Now()
	var sum fmt.Stringer = noShape{web}
	if shape {
		s, err := simweb.Describe(web)
		if err != nil {
			return err
		}
		sum = s
	}
	srv, err := simweb.Start(web, opts)
	if err != nil {
		return err
	}
	if err := writeCA(env, srv, caOut); err != nil {
		srv.Close()
		return err
	}
	if shape {
		fmt.Fprintf(env.stdout, "%s  (shape computed in %v)\n", sum, time.Since(start).Round(time.Millisecond))
	} else {
		fmt.Fprintln(env.stdout, sum)
	}
	fmt.Fprintf(env.stdout, "serving %d hosts *.%s on %s\n", web.NumHosts(), web.Domain(), srv.Addr())
	printReach(env, srv.Addr(), web.HostName(0), web.Domain())
	return serveUntilDone(ctx, env, srv)
}

func printReach(env *cmdEnv, addr, host, domain string) {
	fmt.Fprintf(env.stdout, "reach it with:\n  curl -H 'Host: %s' http://%s/\n  curl --connect-to ::%s http://%s/\n  curl --cacert CA.pem --connect-to ::%s https://%s/   (CA.pem: --ca-out)\n",
		host, addr, addr, host, addr, host)
	if domain != "" {
		fmt.Fprintf(env.stdout, "  crawler resolver override: --resolve '%s=%s'\n", domain, addr)
	}
	fmt.Fprintln(env.stdout, "press Ctrl-C to stop")
}

func serveUntilDone(ctx context.Context, env *cmdEnv, srv *simweb.Server) error {
	<-ctx.Done()
	st := srv.Requests()
	err := srv.Close()
	fmt.Fprintf(env.stdout, "stopped after %d requests, %d body bytes\n", st.Requests, st.Bytes)
	return err
}

// noShape stands for the shape of a web not described (--shape=false).
type noShape struct{ web *simweb.Web }

func (n noShape) String() string {
	c := n.web.Config()
	return fmt.Sprintf("simweb seed %d: %d hosts, %d articles (shape not computed: --shape=false)", c.Seed, n.web.NumHosts(), n.web.Pages())
}
