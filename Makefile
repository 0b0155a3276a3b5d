# Convenience targets; every one is a plain `go` command underneath, so a
# machine with only Go installed needs none of them.
.PHONY: demo test ci bench bench-onehost build scale-nodes
build:
	go build -o bin/crawler ./cmd/crawler
demo:
	go run ./cmd/crawler demo
test:
	go test ./...
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
# What a machine buys: 1, 2, 3 `crawler node`s, each in a CPU-quota cgroup and
# its own network namespace on a shaped link, against one simweb; regenerates
# BENCHMARKS.md's node-scaling section (docs/bench/scaling.md). Needs root,
# tc, nft (nftables) and perf (linux-perf). Not in CI (its quick test is).
scale-nodes:
	cd bench && go run ./cmd/nodescale -out ../BENCHMARKS.md
