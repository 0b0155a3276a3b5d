// Command cacheinstr counts the instructions one cache lookup executes, hit
// and miss, for CLOCK, RANDOM and LRU at a given size: a figure that, unlike
// nanoseconds, does not move with the host or with what else the machine is
// running, so that two versions of a lookup can be compared on a noisy
// shared machine (docs/bench/cache.md).
//
// It runs itself twice per row under valgrind's callgrind, counting only
// inside the cache's Seen method: both runs fill a cache of k entries the
// same way, then look up n₁ or n₂ keys (residents for "hit", fingerprints
// never seen for "miss"); the difference of the two counts, divided by
// n₂ − n₁, is the cost of one lookup without the fill. The keys are the
// lookup benchmark's (cache.BenchmarkLookup): residents mix64(1…k) in a
// scattered order, fresh fingerprints mix64(k+1+i).
//
//	go build -o /tmp/cacheinstr ./cmd/cacheinstr && /tmp/cacheinstr -k 65536
//
// Needs valgrind (Debian's valgrind package) and a binary with its symbol
// table: go run strips it, and callgrind then finds no Seen to count in.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/sextant-crawler/sextant/cache"
)

// seenSymbol is the callgrind --toggle-collect pattern of each algorithm's
// Seen method.
var seenSymbol = map[string]string{
	cache.AlgoClock:  "*cache.(*Clock).Seen",
	cache.AlgoRandom: "*cache.(*Random).Seen",
	cache.AlgoLRU:    "*cache.(*LRU).Seen",
}

func main() {
	var (
		k      = flag.Int("k", 1<<16, "cache size in entries")
		algos  = flag.String("algos", "clock,random,lru", "algorithms, comma-separated: clock, random, lru")
		n1     = flag.Int("n1", 100_000, "lookups of the first run")
		n2     = flag.Int("n2", 300_000, "lookups of the second run (> n1)")
		child  = flag.Bool("child", false, "internal: run the workload (under callgrind)")
		algo   = flag.String("algo", "", "internal: the child's algorithm")
		kind   = flag.String("kind", "", "internal: the child's lookups, hit or miss")
		n      = flag.Int("n", 0, "internal: the child's number of lookups")
		binary = flag.String("valgrind", "valgrind", "the valgrind program")
	)
	flag.Parse()
	if *child {
		if err := workload(*algo, *kind, *k, *n); err != nil {
			fmt.Fprintln(os.Stderr, "cacheinstr:", err)
			os.Exit(1)
		}
		return
	}
	if *k < 1 || *n1 < 1 || *n2 <= *n1 {
		fmt.Fprintln(os.Stderr, "cacheinstr: need k ≥ 1 and 0 < n1 < n2")
		os.Exit(2)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cacheinstr:", err)
		os.Exit(1)
	}
	fmt.Printf("instructions per lookup inside Seen, k = %d (callgrind, runs of %d and %d lookups)\n", *k, *n1, *n2)
	fmt.Printf("%-8s %10s %10s\n", "algo", "hit", "miss")
	for _, a := range strings.Split(*algos, ",") {
		if _, ok := seenSymbol[a]; !ok {
			fmt.Fprintf(os.Stderr, "cacheinstr: unknown algorithm %q (clock, random, lru)\n", a)
			os.Exit(2)
		}
		var per [2]float64
		for i, kd := range []string{"hit", "miss"} {
			c1, err := count(*binary, self, a, kd, *k, *n1)
			if err == nil {
				var c2 uint64
				if c2, err = count(*binary, self, a, kd, *k, *n2); err == nil {
					per[i] = float64(int64(c2-c1)) / float64(*n2-*n1)
				}
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "cacheinstr: %s %s: %v\n", a, kd, err)
				os.Exit(1)
			}
		}
		fmt.Printf("%-8s %10.1f %10.1f\n", a, per[0], per[1])
	}
}

var collected = regexp.MustCompile(`Collected : (\d+)`)

// count runs the workload under callgrind and returns the instructions
// executed inside the algorithm's Seen.
func count(valgrind, self, algo, kind string, k, n int) (uint64, error) {
	cmd := exec.Command(valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null",
		"--toggle-collect="+seenSymbol[algo], self, "-child", "-algo", algo, "-kind", kind,
		"-k", strconv.Itoa(k), "-n", strconv.Itoa(n))
	// One thread and no collection: the Go runtime's scheduler and GC
	// threads are what valgrind copes with worst.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GOGC=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s: %w\n%s", valgrind, err, tail(out))
	}
	m := collected.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no instruction count in callgrind's output:\n%s", tail(out))
	}
	c, err := strconv.ParseUint(string(m[1]), 10, 64)
	if err == nil && c == 0 {
		err = errors.New("callgrind counted no instruction in Seen: the binary has no symbol table (go run strips it; use go build)")
	}
	return c, err
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// workload fills a cache of k entries and looks up n keys of the kind.
func workload(algo, kind string, k, n int) error {
	c, err := cache.New(algo, k)
	if err != nil {
		return err
	}
	// The concrete types, as a worker holding one calls them (the
	// interface call is outside Seen and not counted either way).
	seen := c.Seen
	switch cc := c.(type) {
	case *cache.Clock:
		seen = cc.Seen
	case *cache.Random:
		seen = cc.Seen
	}
	for i := range k {
		seen(mix64(uint64(i) + 1))
	}
	keys := make([]uint64, n)
	switch kind {
	case "hit":
		// cache's strideFor: a step coprime to k near k/φ.
		stride := uint64(float64(k) * 0.6180339887498949)
		for stride < 1 || gcd(stride, uint64(k)) != 1 {
			stride++
		}
		j := uint64(0)
		for i := range keys {
			keys[i] = mix64(j + 1)
			j = (j + stride) % uint64(k)
		}
	case "miss":
		for i := range keys {
			keys[i] = mix64(uint64(k) + 1 + uint64(i))
		}
	default:
		return fmt.Errorf("kind %q: want hit or miss", kind)
	}
	hits := 0
	for _, x := range keys {
		if seen(x) {
			hits++
		}
	}
	if want := map[string]int{"hit": n, "miss": 0}[kind]; hits != want {
		return fmt.Errorf("the lookups did not all %s: %d hits of %d", kind, hits, n)
	}
	return nil
}

// mix64 is cache's (splitmix64's finaliser): the benchmark's keys.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
