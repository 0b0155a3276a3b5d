package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sextant-crawler/sextant/internal/control"
	"github.com/sextant-crawler/sextant/internal/coord"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/demo"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/report"
	"github.com/sextant-crawler/sextant/internal/status"
)

func init() {
	register(&command{name: "node", summary: "run one node of a cluster from a config file (serves /metrics)", run: runNode})
}

func runNode(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "node", `--config FILE [--id ID] [--exit-when-done]

Runs one node of a Sextant cluster as described by FILE (JSON; see
deploy/README.md and internal/nodeconfig): node id, gRPC listen address,
every member's advertised address, data dir, mTLS files from
'crawler certs', workers, cache sizes, politeness, resolver overrides and
seeds. Every node is given the same seeds and keeps the hosts it owns.

The node serves Prometheus metrics on http://METRICS/metrics, a liveness
check on /healthz and a JSON snapshot on /status. Its status page
(--status-listen or "status_listen", loopback by default; read-only) shows pages/s, fetch outcomes, frontier and DUE sizes,
the live miss-ratio curves of the front caches and of the per-peer splitter
caches with sizing advice, per-peer traffic, the busiest and most-delayed
hosts, and the whole cluster (asked over the peers' mTLS gRPC port). When the whole cluster's
crawl has terminated it prints the node's final report (totals, rates, cache
hit rates, cross-machine traffic reduction, wire and DUE bytes per URL, and
the cache-size advice from the live curves; as JSON too with --report-json)
and keeps serving (so a container
does not restart in a loop) until SIGTERM or Ctrl-C, unless
--exit-when-done (it then exits 5 s later: its peers confirm termination
by asking it). SIGTERM stops gracefully: fetches in flight finish or
are requeued, spooled batches stay on disk, and a restart with the same
data dir resumes. With --revisit (or "revisit") the crawl is continuous:
fetched URLs are fetched again when due, the cluster's crawl never
terminates, and the node runs until SIGTERM.`)
	cfgPath := f.String("config", "", "node config file (JSON)")
	id := f.String("id", "", "this node's id, overriding the file's (one file for every member; \"{id}\" in its paths is replaced)")
	probe := f.String("healthcheck", "", "only GET this URL and exit 0 on a response with status < 500, 1 otherwise (the container health check: the image has no shell or curl)")
	exitDone := f.Bool("exit-when-done", false, "exit when the cluster's crawl has terminated instead of serving metrics until SIGTERM")
	statusListen := f.String("status-listen", "", "where to serve the read-only status page, overriding the config's \"status_listen\" (default 127.0.0.1:0; keep it on loopback unless you mean to expose it, as a container does); \"off\" disables it")
	statusAddr := f.String("status", "", "the old spelling of --status-listen")
	reportJSON := f.String("report-json", "", "also write the node's final report as JSON to this file")
	listen := f.String("listen", "", "gRPC (mTLS) listen address, overriding the config's \"listen\" (default: this member's addr if it is an IP or localhost, else :PORT on every interface)")
	force := f.Bool("force", false, "take over a data dir made by another run (crawl, demo, another node or seeds): its IDENTITY is rewritten, with a warning")
	etcd := addEtcdFlags(f)
	warcDir := f.String("warc-dir", "", "archive every fetch as WARC files in this directory, overriding the config's \"warc_dir\"")
	warcComp := f.String("warc-compression", "", "how WARC records are compressed (fast, huffman, store or 1-9), overriding the config's \"warc_compression\" (default "+crawl.DefaultOptions().WARCArchive.Compression+")")
	rvFlags := addNodeRevisitFlags(f.FlagSet)
	progress := f.Duration("progress", 30*time.Second, "log a progress line (fetched, queued, pages/s, peers) this often; 0: never")
	skipCheck := f.Bool("skip-check", false, "open the data dir without reading every frontier key and spool entry to verify them (0.2-0.5 s per million queued URLs saved); run 'crawler fsck' after anything worse than a crash")
	if err := f.parse(args); err != nil {
		return err
	}
	if *probe != "" {
		return healthcheck(ctx, *probe)
	}
	if *cfgPath == "" {
		return usagef("--config is required")
	}
	cfg, err := nodeconfig.LoadAs(*cfgPath, *id)
	if err != nil {
		if errors.Is(err, nodeconfig.ErrInvalid) {
			return usagef("%s", oneLine(err))
		}
		return err
	}
	if *listen != "" {
		if _, _, err := net.SplitHostPort(*listen); err != nil {
			return usagef("--listen %q: %v", *listen, err)
		}
		cfg.Listen = *listen
	}
	if err := etcd.apply(cfg); err != nil {
		return usagef("%s", oneLine(err))
	}
	if *warcDir != "" {
		cfg.WARCDir = *warcDir
	}
	if *warcComp != "" {
		cfg.WARCCompression = *warcComp
	}
	if err := rvFlags.apply(cfg); err != nil {
		return err
	}
	status, err := nodeStatusListen(*statusListen, *statusAddr, cfg.StatusListen)
	if err != nil {
		return err
	}
	fenv := *env
	fenv.forceIdentity, fenv.skipCheck = *force, *skipCheck
	fenv.progress = *progress
	return runNodeConfig(ctx, &fenv, cfg, *exitDone, status, *reportJSON, nil)
}

// nodeStatusListen is where a node serves its status page: --status-listen,
// else the old --status, else the config's status_listen, else a loopback
// port; "off" for none.
func nodeStatusListen(flagListen, flagOld, config string) (string, error) {
	addr := firstNonEmpty(flagListen, flagOld, config, "127.0.0.1:0")
	if addr != "off" {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", usagef("--status-listen %q: %v", addr, err)
		}
	}
	return addr, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// healthcheck GETs url with a short timeout.
func healthcheck(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usagef("--healthcheck %q: %v", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func oneLine(err error) string {
	b := []byte(err.Error())
	for i, c := range b {
		if c == '\n' {
			b[i] = ';'
		}
	}
	return string(b)
}

// exitGrace is how long --exit-when-done keeps a node serving after the
// cluster's crawl terminated, so that its peers can still confirm it.
const exitGrace = 5 * time.Second

// nodeReady is told the metrics address once it is being served (tests).
type nodeReady func(metricsAddr, grpcAddr string)

// runNodeConfig runs one node to the end of the cluster's crawl, then
// (unless exitDone) serves metrics until ctx is cancelled. statusAddr is
// where the status page is served ("off": not at all); reportJSON, if set,
// receives the final report as JSON.
func runNodeConfig(ctx context.Context, env *cmdEnv, cfg *nodeconfig.Config, exitDone bool, statusAddr, reportJSON string, ready nodeReady) error {
	sl, err := cfg.SeedList()
	if err != nil {
		return err
	}
	reportSeeds(env, "of "+cfg.ID, sl)
	seeds := sl.URLs
	resolve, err := cfg.ResolveMap(ctx, net.DefaultResolver.LookupNetIP)
	if err != nil {
		return err
	}
	mo, err := cfg.MemberOptions(seeds, resolve)
	if err != nil {
		return err
	}
	// The splitter logs peer failures (rate-limited) and recoveries: the
	// only place an operator learns why a peer's spool grows.
	mo.Logger = env.logger().With("node", cfg.ID)
	mo.Node.Logger = mo.Logger
	sess, err := openEtcdSession(ctx, cfg, mo.Logger)
	if err != nil {
		return err
	}
	if sess != nil {
		defer sess.Close() // after m.Close: the lease is revoked last
		mo.Control = sess
	}
	mo.Node.Identity, mo.Node.ForceIdentity = crawl.NewIdentity("node", seeds), env.forceIdentity
	mo.Node.SkipOpenCheck = env.skipCheck
	// The status page's live curves, busiest hosts (from the crawl log)
	// and the NodeStatus service for the peers' cluster view.
	curves, err := demo.NewCurves()
	if err != nil {
		return err
	}
	mo.Node.FrontObserverBatch = curves.Front.ObserveBatch // once per page
	mo.Node.RemoteObserverBatch = curves.Cross.ObserveBatch
	tally, closeLog, err := openNodeLog(&mo)
	if err != nil {
		return err
	}
	defer closeLog() // after m.Close (deferred later, so run earlier)
	var src atomic.Pointer[demo.StatusSource]
	nc := newNodeControl(ctx, &mo, cfg.ID, lazyStatus(cfg.ID, &src)) // registers NodeStatus and Control ('crawler ctl', whose drain cancels ctx)
	defer nc.drain()
	ctx, ctl, self, done := nc.ctx, nc.ctl, nc.self, nc.done
	lis, mlis, hlis, err := listenNode(cfg)
	if err != nil {
		return err
	}
	mo.Listener = lis
	m, err := startNodeMember(mo, ctl)
	if err != nil {
		closeListeners(lis, mlis, hlis)
		if errors.Is(err, crawl.ErrInvalidOptions) {
			return usagef("%s", oneLine(err))
		}
		return err
	}

	cacheCfg := nodeCacheConfig(m, mo)
	src.Store(&demo.StatusSource{Member: m, Curves: curves, Tally: tally, Cache: cacheCfg})

	var wg sync.WaitGroup
	defer wg.Wait()
	if statusAddr != "off" {
		url, stop, err := serveNodeStatus(statusAddr, cfg.ID, mo, self, &wg)
		if err != nil {
			m.Close()
			return err
		}
		defer stop()
		fmt.Fprintf(env.stdout, "node %s: status page %s (cluster view over gRPC)\n", cfg.ID, url)
	}
	hs, stopServing := serveNodeHealthMetrics(m, hlis, mlis, done, &wg, ctl)
	defer stopServing()
	closed := false
	defer func() {
		if !closed {
			m.Close()
		}
	}()
	fmt.Fprintf(env.stdout, "node %s: gRPC %s (mTLS), metrics http://%s/metrics, %d members, %d seeds, data %s\n",
		cfg.ID, m.Addr(), mlis.Addr(), len(cfg.Members), len(seeds), cfg.DataDir)
	if ready != nil {
		ready(mlis.Addr().String(), m.Addr())
	}
	if err := m.Seed(ctx, seeds); err != nil {
		return err
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	totals, err := report.StartRun(cfg.DataDir, time.Now())
	if err != nil {
		return err
	}
	start := time.Now()
	prog := startProgressLog(mo.Logger, env.progress, m.Node.Stats, m.Split.Stats)
	runErr := m.Run(ctx)
	prog.Close()
	if err := nodeReport(ctx, env, cfg, m, sess, runErr, start, done, curves, cacheCfg, reportJSON, totals); err != nil {
		return err
	}
	if runErr != nil && ctx.Err() == nil {
		return runErr
	}
	if !exitDone && ctx.Err() == nil {
		fmt.Fprintf(env.stdout, "node %s: serving metrics until SIGTERM\n", cfg.ID)
		<-ctx.Done()
	} else if ctx.Err() == nil {
		// The peers confirm termination by asking this node's status:
		// keep serving a few of their rounds, or they wait for it forever.
		select {
		case <-ctx.Done():
		case <-time.After(exitGrace):
		}
	}
	hs.Shutdown()
	closed = true
	return m.Close()
}

// closeListeners closes the listeners that are not nil.
func closeListeners(ls ...net.Listener) {
	for _, l := range ls {
		if l != nil {
			l.Close()
		}
	}
}

// listenNode binds the node's gRPC, metrics and (if configured) health
// listeners, closing those bound if one fails.
func listenNode(cfg *nodeconfig.Config) (lis, mlis, hlis net.Listener, err error) {
	if lis, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, nil, nil, fmt.Errorf("grpc listen: %w", err)
	}
	mlis, err = net.Listen("tcp", cfg.MetricsListen)
	if err != nil {
		lis.Close()
		return nil, nil, nil, fmt.Errorf("metrics listen: %w", err)
	}
	if cfg.HealthListen != "" {
		if hlis, err = net.Listen("tcp", cfg.HealthListen); err != nil {
			lis.Close()
			mlis.Close()
			return nil, nil, nil, fmt.Errorf("health listen: %w", err)
		}
	}
	return lis, mlis, hlis, nil
}

// openNodeLog opens the node's crawl log with a tally of its busiest hosts
// unless mo already has a crawl log; closeLog closes it.
func openNodeLog(mo *crawl.MemberOptions) (tally *crawl.HostTally, closeLog func(), err error) {
	closeLog = func() {}
	if mo.Node.CrawlLog == nil {
		if err := os.MkdirAll(mo.Node.DataDir, 0o755); err != nil {
			return nil, closeLog, err
		}
		tl, err := crawl.OpenTalliedLog(filepath.Join(mo.Node.DataDir, "crawl.log"), mo.Logger)
		if err != nil {
			return nil, closeLog, err
		}
		closeLog = func() { tl.Close() }
		mo.Node.CrawlLog, tally = tl.Log, tl.Tally
		// A hand-off reads it for the fetched URLs of moved hosts.
		mo.CrawlLogPath = filepath.Join(mo.Node.DataDir, "crawl.log")
	}
	return tally, closeLog, nil
}

// lazyStatus answers for the member once src is set, "starting" before.
func lazyStatus(id string, src *atomic.Pointer[demo.StatusSource]) status.SourceFunc {
	return func() status.Snapshot {
		if s := src.Load(); s != nil {
			return s.Snapshot()
		}
		return status.Snapshot{Node: id, Error: "starting"}
	}
}

// nodeCacheConfig is the member's cache sizes, for the reports.
func nodeCacheConfig(m *crawl.Member, mo crawl.MemberOptions) report.CacheConfig {
	workers, perWorker, shared := m.Node.CacheSizes()
	peerCache := mo.PeerCacheSize
	if mo.PeerCacheAlgo == "none" {
		peerCache = 0
	} else if peerCache == 0 {
		peerCache = crawl.DefaultMemberOptions().PeerCacheSize
	}
	return report.CacheConfig{Workers: workers, CachePerWorker: perWorker, CacheShared: shared, PeerCache: peerCache, Dispatch: m.Node.Dispatch()}
}

// serveNodeHealthMetrics serves the plaintext health service (if hlis is
// set) and /metrics, /healthz and /status on mlis; stop stops them.
func serveNodeHealthMetrics(m *crawl.Member, hlis, mlis net.Listener, done *atomic.Bool, wg *sync.WaitGroup, ctl *control.Controller) (hs *health.Server, stop func()) {
	// Plaintext health-only gRPC server for probes (Kubernetes' grpc probe
	// cannot present a client certificate to the mTLS port).
	hs = health.NewServer()
	var gs *grpc.Server
	if hlis != nil {
		gs = grpc.NewServer()
		healthpb.RegisterHealthServer(gs, hs)
		wg.Add(1)
		go func() { defer wg.Done(); _ = gs.Serve(hlis) }()
	}
	coll := &statsCollector{node: m.Node.Stats, split: m.Split.Stats, done: done.Load}
	reg := newMetricsRegistry(coll)
	reg.MustRegister(controlCollector{node: m.Node.Stats().ID, ctl: ctl})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		st, sp := m.Node.Stats(), m.Split.Stats()
		_ = json.NewEncoder(w).Encode(struct {
			Done  bool `json:"terminated"`
			Node  any  `json:"node"`
			Split any  `json:"splitter"`
		}{done.Load(), st, sp})
	})
	hsrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	wg.Add(1)
	go func() { defer wg.Done(); _ = hsrv.Serve(mlis) }()
	return hs, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hsrv.Shutdown(sctx)
		hs.Shutdown()
		if gs != nil {
			gs.Stop()
		}
	}
}

// nodeReport prints how the node's run ended and its report (and writes
// it as JSON to reportJSON if set).
func nodeReport(ctx context.Context, env *cmdEnv, cfg *nodeconfig.Config, m *crawl.Member, sess *coord.Session, runErr error,
	start time.Time, done *atomic.Bool, curves *demo.Curves, cacheCfg report.CacheConfig, reportJSON string, totals report.Totals) error {
	st, sp := m.Node.Stats(), m.Split.Stats()
	if ctx.Err() != nil {
		fmt.Fprintf(env.stdout, "node %s: interrupted after %s; the state is in %s (restart to resume)\n", cfg.ID, time.Since(start).Round(time.Millisecond), cfg.DataDir)
	} else if runErr == nil && m.RemovedByControl() {
		v, _ := sess.View()
		fmt.Fprintf(env.stdout, "node %s: removed from the cluster (view epoch %d in etcd): stopped after %s\n", cfg.ID, v.Epoch, time.Since(start).Round(time.Millisecond))
	} else if runErr == nil && m.Phase() == crawl.PhaseRemoved {
		done.Store(true)
		fmt.Fprintf(env.stdout, "node %s: removed from the cluster after %s (its hosts were handed over; the members refuse it from now on): shut it down\n", cfg.ID, time.Since(start).Round(time.Millisecond))
	} else if runErr == nil {
		done.Store(true)
		fmt.Fprintf(env.stdout, "node %s: the cluster's crawl has terminated after %s\n", cfg.ID, time.Since(start).Round(time.Millisecond))
	}
	maxPages, maxDepth := m.Node.Limits()
	rep := report.Build(report.KindNode, []report.Input{{Stats: st, Split: &sp, Front: curves.Front, Cross: curves.Cross, Cache: cacheCfg,
		Limits: report.Limits{MaxPagesPerHost: maxPages, MaxDepth: maxDepth}}}, time.Since(start))
	totals, err := report.FinishRun(cfg.DataDir, totals)
	if err != nil {
		return errors.Join(runErr, err)
	}
	for _, l := range totals.Lines(rep) {
		fmt.Fprintln(env.stdout, l)
	}
	rep.WriteText(env.stdout, "Sextant node report: node "+cfg.ID)
	if reportJSON != "" {
		if err := report.WriteJSON(reportJSON, rep); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return nil
}

// serveNodeStatus serves the status page of self on addr, its cluster view
// asking the other members over their NodeStatus gRPC service with this
// node's mTLS client certificate. stop ends it (the goroutines are in wg).
func serveNodeStatus(addr, id string, mo crawl.MemberOptions, self status.Source, wg *sync.WaitGroup) (url string, stop func(), err error) {
	var peers []status.PeerAddr
	ids := make([]string, 0, len(mo.Members))
	for _, m := range mo.Members {
		ids = append(ids, string(m.ID))
		if string(m.ID) != id {
			peers = append(peers, status.PeerAddr{ID: string(m.ID), Addr: m.Addr})
		}
	}
	p, err := status.DialPeers(peers, credentials.NewTLS(mo.TLS.ClientConfig(ids)), 2*time.Second)
	if err != nil {
		return "", nil, err
	}
	h, err := status.New(status.Options{Source: self, Cluster: p.Cluster(self), Title: "Sextant node " + id})
	if err != nil {
		p.Close()
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.Close()
		return "", nil, fmt.Errorf("status listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	wg.Add(2)
	go func() { defer wg.Done(); _ = h.Run(ctx) }()
	go func() { defer wg.Done(); _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/?cluster=1", func() {
		cancel()
		sctx, c2 := context.WithTimeout(context.Background(), 5*time.Second)
		defer c2()
		_ = srv.Shutdown(sctx)
		p.Close()
	}, nil
}
