package main

import (
	"context"
	"os"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/demo"
	"github.com/sextant-crawler/sextant/simweb"
)

func init() {
	register(&command{name: "demo", summary: "crawl the built-in synthetic web with a multi-node cluster (the main job)", run: runDemo})
}

func runDemo(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "demo", `[flags]

Builds the default synthetic web (simweb: about 300 virtual hosts on loopback,
most of them HTTPS and some HTTP/2, every pathology on a few of them) and crawls it with an N-node Sextant cluster
in this process: real gRPC between nodes, mutual TLS from a fresh cluster CA,
one data dir per node. A progress line shows pages/s and cross-machine traffic;
the final report gives per-node throughput, cache hit rates, the cross-machine
traffic reduction, bytes per URL on the wire and on disk, and checks the
fetched set against simweb's ground-truth oracle. Ctrl-C stops it gracefully.
Run 'crawler simweb' to only serve the web.`)
	nodes := f.Int("nodes", 3, "number of cluster nodes")
	workers := f.Int("workers", 32, "fetch workers per node")
	hosts := f.Int("hosts", 0, "hosts in the synthetic web (0: the default web)")
	pages := f.Int("pages", 0, "approximate number of articles in the synthetic web (0: the default web's); spread over --hosts")
	seed := f.Uint64("seed", 0, "seed of the synthetic web")
	noPath := f.Bool("no-pathologies", false, "build the web without pathological hosts")
	plain := f.Bool("plain", false, "serve every host over plain HTTP (by default most hosts are HTTPS, some HTTP/2, as on the web)")
	cacheW := f.Int("cache-per-worker", crawl.DefaultOptions().CachePerWorker, "front cache entries per worker (CLOCK)")
	cacheShared := f.Bool("cache-shared", false, "one front cache per node of cache-per-worker × workers entries, shared by its workers")
	dispatch := f.String("dispatch", crawl.DefaultOptions().Frontier.Dispatch, "which worker fetches a ready host: any or host-affine (each host bound to one worker; a worker whose own hosts all wait steals another's ready host)")
	peerCache := f.Int("peer-cache", crawl.DefaultMemberOptions().PeerCacheSize, "per-peer splitter cache entries (CLOCK; 0: no per-peer cache)")
	coalesce := f.Duration("wire-coalesce", 500*time.Millisecond, "how long a batch spooled for a peer may wait for later ones to share its wire message (0: each batch alone)")
	data := f.String("data", "", "data directory to keep (default: a temporary one, removed at the end)")
	report := f.String("report-json", "", "also write the final report as JSON to this file")
	every := f.Duration("progress", time.Second, "progress interval")
	traces := f.Bool("traces", false, "write each node's full and cross fingerprint traces (DATA/node-i/{full,cross}.trace) for 'crawler cachesim'; needs --data")
	warcDir := f.String("warc-dir", "", "archive every fetch as WARC/1.1 files in this directory (off by default)")
	warcComp := f.String("warc-compression", crawl.DefaultOptions().WARCArchive.Compression, "how WARC records are compressed: fast (deflate level 1), huffman (Huffman coding only), store (no compression, still .warc.gz) or a level 1-9")
	force := f.Bool("force", false, "take over a --data made by another run (crawl, node, another web or cluster size): its IDENTITY files are rewritten, with a warning")
	statusAddr := f.String("status", "127.0.0.1:0", "the old spelling of --status-listen")
	statusListen := f.String("status-listen", "", "listen address of the live, read-only status pages (default 127.0.0.1:0, loopback; 'off' to disable)")
	noEtcd := f.Bool("no-etcd", false, "run without the embedded etcd control plane (no lease fencing)")
	if err := f.parse(args); err != nil {
		return err
	}
	cfg := simweb.DefaultConfig()
	cfg.Seed = *seed
	if *every < 0 {
		return usagef("--progress %v must not be negative", *every)
	}
	if *hosts < 0 || *pages < 0 {
		return usagef("--hosts and --pages must not be negative")
	}
	if *hosts > 0 {
		cfg.Hosts = *hosts
	}
	if *pages > 0 {
		cfg.PagesPerHost = float64(*pages) / float64(cfg.Hosts)
	}
	cfg.NoPathologies = *noPath
	if *plain {
		cfg.HTTPSShare, cfg.RedirectHTTPSShare, cfg.H2Share, cfg.HSTSShare = 0, 0, 0, 0
	}
	if *peerCache < 0 {
		return usagef("--peer-cache must not be negative")
	}
	if *peerCache == 0 {
		*peerCache = -1 // demo.Options: no per-peer cache
	}
	if *coalesce <= 0 {
		*coalesce = -1
	}
	o := demo.Options{Web: cfg, Nodes: *nodes, Workers: *workers, CachePerWorker: *cacheW, CacheShared: *cacheShared, Dispatch: *dispatch, PeerCache: *peerCache, WireCoalesce: *coalesce,
		DataDir: *data, ReportJSON: *report, Progress: *every, Live: isTerminal(env.stdout), Traces: *traces, WARCDir: *warcDir, WARCCompression: *warcComp, StatusAddr: firstNonEmpty(*statusListen, *statusAddr), Force: *force, NoEtcd: *noEtcd,
		Logger: env.logger()}
	if *traces && *data == "" {
		return usagef("--traces needs --data (the traces would be removed with a temporary directory)")
	}
	if err := o.Validate(); err != nil {
		return usagef("%v", err)
	}
	rep, err := demo.Run(ctx, o, env.stdout)
	if err != nil {
		return err
	}
	if !rep.OracleMatch && ctx.Err() == nil {
		return errOracleMismatch
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
