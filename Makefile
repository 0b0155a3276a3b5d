# Convenience targets; every one is a plain `go` command underneath, so a
# machine with only Go installed needs none of them.
.PHONY: demo test ci bench bench-onehost build scale-nodes
build:
	go build -o bin/crawler ./cmd/crawler
demo:
	go run ./cmd/crawler demo
test:
	go test -timeout 30m ./...
ci:
	bash .ci/run
# Sextant vs the ceiling loop, colly, Scrapy and wget2 on one simweb, plus
# quick package benchmarks; regenerates BENCHMARKS.md (≈20 min on 2 cores).
# bench/ is a separate module so that the product never depends on colly.
# Needs root (a network namespace) and Debian's python3-scrapy and wget2.
bench:
	cd bench && go run ./cmd/benchall -out ../BENCHMARKS.md
# One host (the wiki mirror) served by Debian's nginx: Sextant ÷ a sequential
# keep-alive fetch loop of the same URLs, same run (docs/bench/onehost.md).
bench-onehost:
	cd bench && go run ./cmd/onehost -rounds 5
# Issue 29: one node crawls a 10⁵-host simweb (≈10⁷ URLs) to the end,
# sampled into a CSV + plots, checked against the streaming oracle; updates
# docs/bench/scale/ and BENCHMARKS.md's make-scale section (> 1 h on 2 cores;
# SCALE_HOSTS=10000 for the 10⁶-URL run). Not in CI (its harness test is).
SCALE_OUT ?= /tmp/sextant-scale
SCALE_HOSTS ?= 100000
.PHONY: scale
scale:
	cd bench && go run ./cmd/scale -hosts $(SCALE_HOSTS) -out $(SCALE_OUT) -figs ../docs/bench/scale -bench-md ../BENCHMARKS.md

# What a machine buys: 1, 2, 3 `crawler node`s, each in a CPU-quota cgroup and
# its own network namespace on a shaped link, against one simweb; regenerates
# BENCHMARKS.md's node-scaling section (docs/bench/scaling.md). Needs root,
# tc, nft (nftables) and perf (linux-perf). Not in CI (its quick test is).
scale-nodes:
	cd bench && go run ./cmd/nodescale -out ../BENCHMARKS.md
