package cacheplot

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/cache/cachesim"
	"github.com/sextant-crawler/sextant/cache/tracegen"
)

func TestWrite(t *testing.T) {
	tr, err := tracegen.Generate(tracegen.Options{Seed: 1, Window: 1 << 12, FarMin: 1 << 6}, 20000)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cachesim.Simulate(context.Background(), tr, cachesim.SimOptions{Ks: cachesim.PowersOfTwo(0, 12)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := Write(dir, res, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(Files) {
		t.Fatalf("wrote %v", paths)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		png := bytes.HasPrefix(b, []byte("\x89PNG"))
		svg := bytes.Contains(b[:min(len(b), 512)], []byte("<svg"))
		if !png && !svg || len(b) < 1000 {
			t.Errorf("%s: %d bytes, neither PNG nor SVG", p, len(b))
		}
	}
	// Without MIN only the miss-rate figure is drawn.
	var noMin []cachesim.Result
	for _, r := range res {
		if r.Algo == cache.AlgoLRU {
			noMin = append(noMin, cachesim.Result{Algo: r.Algo, K: r.K, MissRate: r.MissRate, RelMin: nan()})
		}
	}
	if paths, err := Write(t.TempDir(), noMin, ""); err != nil || len(paths) != 2 {
		t.Fatalf("without MIN: %v, %v", paths, err)
	}
	if _, err := Write(t.TempDir(), nil, ""); err == nil {
		t.Fatal("no results drawn without error")
	}
}

func nan() float64 { var z float64; return z / z }
