#!/bin/sh
# Regenerates every figure and table of docs/caching-study.md.
#
#   study/run.sh [DATA_DIR]          (from the repository root)
#
# DATA_DIR (default /tmp/sextant-study) receives the crawls and traces (GBs);
# the CSVs and PNG plots go to docs/caching-study/. Steps can be picked with
# STEPS="crawl sweep perworker order wiki live bench clocksmall dispatch livedispatch render"
# (default: all).
# Every number of the document comes from the files written here: the last
# step, render, fills docs/caching-study.md from them (study/studydoc), and
# TestDocMatchesData fails when the committed document and data disagree.
# SITES is the wiki mirror (default ../shared/testdata/sites).
# SCALE=small runs a 10⁵-URL crawl instead of the 10⁶-URL one (minutes
# instead of an hour; the figures in the doc are from the full run).
set -eu
DATA=${1:-/tmp/sextant-study}
OUT=docs/caching-study
STEPS=${STEPS:-"crawl sweep perworker order wiki live bench clocksmall dispatch livedispatch render"}
# cachesim runs every policy, the exact textbook CLOCKs included (issue 30).
ALGOS=clock,random,lru,static,min,infinite,clock-exact,clock-exact-marked
HOSTS=10400 PAGES=520000
[ "${SCALE:-}" = small ] && HOSTS=2000 PAGES=50000
BIN=$DATA/bin
mkdir -p "$DATA" "$BIN" "$OUT"
go build -o "$BIN/crawler" ./cmd/crawler
go build -o "$BIN/tracecrawl" ./study/tracecrawl
go build -o "$BIN/cachestudy" ./study/cachestudy
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
stamp() { # a step finished: steps.csv (step,finished,load) gives the document its regeneration status
	[ -f "$OUT/steps.csv" ] || echo "step,finished,load" >"$OUT/steps.csv"
	echo "$1,$(date -u +%Y-%m-%dT%H:%MZ),$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo -1)" >>"$OUT/steps.csv"
}
keep() { # keep the CSV and the PNGs of a cachesim/cachestudy output dir
	mkdir -p "$OUT/$2"
	cp "$1"/*.csv "$1"/*.png "$OUT/$2/"
}

# 1. A 3-node crawl of ≥ 10⁶ URLs with worker-tagged full and cross traces.
if has crawl; then
	rm -rf "$DATA/big"
	uptime
	"$BIN/tracecrawl" --hosts $HOSTS --pages $PAGES --no-pathologies --data "$DATA/big" | tee "$DATA/big.log"
	cp "$DATA/big/summary.json" "$OUT/crawl-summary.json"
	uptime
	stamp crawl
fi

# 2. Item 1: all six algorithms, k = 2^0 … 2^25, full trace and cross subtrace of node-0.
if has sweep; then
	for t in full cross; do
		"$BIN/crawler" cachesim --algos $ALGOS --trace "$DATA/big/node-0/$t.trace" --kmax 25 --workers 32 \
			--out "$DATA/sweep-$t" | tee "$DATA/sweep-$t.log"
		keep "$DATA/sweep-$t" "sweep-$t"
	done
	stamp sweep
fi

# 3. Item 2: W per-worker caches of k/W vs one cache of k (and the sharded shared cache).
if has perworker; then
	for t in full cross; do
		"$BIN/cachestudy" perworker --trace "$DATA/big/node-0/$t.trace" --crawl-workers 32 \
			--ws 1,8,32,64,500 --algos clock --kmax 25 --out "$DATA/perworker-$t"
		keep "$DATA/perworker-$t" "perworker-$t"
	done
	stamp perworker
fi

# 4. Item 3: crawl order (offline crawl of simweb through its generator), without and with
#    politeness (a host fetched again only 256 fetches after its last fetch).
if has order; then
	args=""
	for p in 0 256; do
		for o in bfs inlinks random; do
			name=order-$o label=$o
			[ $p != 0 ] && name=order-polite-$o label=$o-polite
			mkdir -p "$OUT/$name"
			"$BIN/cachestudy" order --hosts 2000 --pages 100000 --order $o --polite $p --out "$DATA/$name.trace" \
				--stats "$OUT/$name/emulate.json"
			"$BIN/crawler" cachesim --algos $ALGOS --trace "$DATA/$name.trace" --kmax 22 --out "$DATA/$name" >/dev/null
			cp "$DATA/$name/results.csv" "$OUT/$name/"
			args="$args $label=$DATA/$name/results.csv"
		done
	done
	"$BIN/cachestudy" plot --algo lru --title "LRU by crawl order, without and with politeness (simweb 2000 hosts, 204 669 URLs)" \
		--out "$DATA/order-lru" $args
	mkdir -p "$OUT/order-lru" && cp "$DATA/order-lru"/*.png "$OUT/order-lru/"
	stamp order
fi

# 5. Item 4: the real wiki mirror against simweb, default and with the new knobs.
if has wiki; then
	rm -rf "$DATA/wiki"
	"$BIN/tracecrawl" --dir "${SITES:-../shared/testdata/sites}" --nodes 1 --data "$DATA/wiki"
	"$BIN/crawler" cachesim --algos $ALGOS --trace "$DATA/wiki/node-0/full.trace" --kmax 16 --out "$DATA/wiki-sim" >/dev/null
	keep "$DATA/wiki-sim" wiki
	args="wiki-mirror=$DATA/wiki-sim/results.csv"
	# name:nav dead links-median links-mean
	for v in "default:0 0 0 0" "nav6:6 0 0 0" "wiki-like:6 0.85 14 22"; do
		name=${v%%:*}
		set -- ${v#*:}
		"$BIN/cachestudy" order --hosts 1 --pages 1500 --max-pages-per-host 2000 --nav-links $1 \
			--dead-links $2 --links-median $3 --links-mean $4 --out "$DATA/sim1-$name.trace"
		"$BIN/crawler" cachesim --algos $ALGOS --trace "$DATA/sim1-$name.trace" --kmax 16 --out "$DATA/sim1-$name" >/dev/null
		keep "$DATA/sim1-$name" "simweb1-$name"
		args="$args simweb-$name=$DATA/sim1-$name/results.csv"
	done
	"$BIN/cachestudy" plot --algo lru --title "LRU: wiki mirror vs one-host simweb" --out "$DATA/wiki-lru" $args
	mkdir -p "$OUT/wiki-lru" && cp "$DATA/wiki-lru"/*.png "$OUT/wiki-lru/"
	stamp wiki
fi

# 6. Item 2, live: per-worker caches (P × 32 workers) vs one shared cache of 32·P per node,
#    ABBA order, at P = 512 (the default) and P = 64, on the demo's default web.
if has live; then
	mkdir -p "$OUT/live"
	for p in 512 64; do
		tag=live; [ $p = 64 ] && tag=live64
		i=0
		for mode in pw sh sh pw; do
			i=$((i + 1))
			extra=""
			[ $mode = sh ] && extra=--cache-shared
			uptime
			"$BIN/crawler" demo --status off --progress 30s --cache-per-worker $p $extra \
				--report-json "$OUT/live/$tag-$i-$mode.json" | tail -12
		done
	done
	# the same total (16 384 entries per node) at W = 8, 64, 500 workers per node
	for w in 8 64 500; do
		for mode in pw sh; do
			extra=""
			[ $mode = sh ] && extra=--cache-shared
			uptime
			"$BIN/crawler" demo --status off --progress 30s --workers $w --cache-per-worker $((16384 / w)) $extra \
				--report-json "$OUT/live/livew-$w-$mode.json" | tail -12
		done
	done
	stamp live
fi

# 7. ns per lookup: per-worker caches vs cache.NewShared under W goroutines.
if has bench; then
	uptime
	go test ./study/cachestudy -run '^$' -bench Lookup -benchtime 1000000x -count 5 | tee "$OUT/bench-lookup.txt"
	uptime
	stamp bench
fi

# 8. Issue 30: the production CLOCK against exact CLOCK on a live crawl's traces, from a
#    crawl of 2 000 hosts (step 1's shape, smaller, so that it reruns in minutes).
if has clocksmall; then
	rm -rf "$DATA/small"
	"$BIN/tracecrawl" --hosts 2000 --pages 50000 --no-pathologies --data "$DATA/small" | tee "$DATA/small.log"
	for t in full cross; do
		"$BIN/crawler" cachesim --algos clock,lru,infinite,clock-exact,clock-exact-marked --kmax 20 --no-plots \
			--trace "$DATA/small/node-0/$t.trace" --out "$DATA/clock-small-$t" >/dev/null
		mkdir -p "$OUT/clock-small-$t" && cp "$DATA/clock-small-$t/results.csv" "$OUT/clock-small-$t/"
	done
	cp "$DATA/small/summary.json" "$OUT/clock-small-full/crawl-summary.json"
	stamp clocksmall
fi

# 9. Issue 30: host-affine dispatch in simulation. An offline polite BFS crawl of simweb; every
#    link replayed through one global cache of k, and through 32 per-worker caches of k/32 with
#    each page's links going to its host's worker (frontier.HostWorker) or to page i mod 32.
#    Exact LRU (and CLOCK). The whole crawl, and its first 110 000 pages (about 2 × 10⁶ links,
#    the size of the trace).
if has dispatch; then
	for v in "dispatch:0" "dispatch-2m:110000"; do
		name=${v%%:*}
		"$BIN/cachestudy" dispatch --hosts 2000 --pages 100000 --polite 256 --workers 32 --max-pages ${v#*:} \
			--algos lru,clock --ks 4096,8192,16384,32768,65536,262144 --out "$OUT/$name"
	done
	stamp dispatch
fi

# 10. Issue 30, live: --dispatch any vs host-affine, per-worker caches (512 × 32 per node).
#     A web of 1 000 hosts × 10 pages (about 10 hosts per worker): the two modes run at the same
#     time, so that they share the machine's load alike, and both are stopped (SIGINT: the report
#     covers what was done) after LIVE_SECS (default 1200 s; the whole crawl takes far longer on a
#     loaded 2-core machine). A web of 100 hosts × 30 pages (about one host per worker: a free
#     worker must steal), crawled to the end, one mode after the other.
if has livedispatch; then
	mkdir -p "$OUT/live-dispatch"
	uptime
	for d in any host-affine; do
		timeout -s INT "${LIVE_SECS:-1200}" "$BIN/crawler" demo --status off --progress 60s --hosts 1000 --pages 10000 \
			--dispatch $d --report-json "$OUT/live-dispatch/web1000-$d.json" >"$DATA/live-dispatch-1000-$d.log" 2>&1 &
	done
	wait
	tail -n 14 "$DATA/live-dispatch-1000-any.log" "$DATA/live-dispatch-1000-host-affine.log"
	for d in host-affine any; do
		uptime
		"$BIN/crawler" demo --status off --progress 30s --hosts 100 --pages 3000 --dispatch $d \
			--report-json "$OUT/live-dispatch/web100-$d.json" | tail -n 14
	done
	stamp livedispatch
fi

# 11. Fill the document from the data.
if has render; then
	go run ./study/studydoc --data "$OUT" --template study/studydoc/caching-study.md.tmpl --out docs/caching-study.md
fi
