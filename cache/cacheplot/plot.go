// Package cacheplot draws the miss-rate curves of cachesim.Simulate as PNG and SVG
// figures like the caching study's: miss rate against cache size (log scale)
// for every algorithm, and each algorithm's miss rate relative to MIN.
//
// It lives apart from package cache so that the crawler's hot packages do not
// link gonum/plot and its fonts. Functions are safe for concurrent use.
//
// Design: Broder, Najork & Wiener, "Efficient URL Caching for World Wide Web
// Crawling" (WWW 2003), figures 2–5.
package cacheplot

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/sextant-crawler/sextant/cache/cachesim"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Files are the names Write produces in its directory.
var Files = []string{"missrate.png", "missrate.svg", "relmin.png", "relmin.svg"}

// Write draws results into dir as missrate.{png,svg} and, if MIN was
// simulated, relmin.{png,svg}. It returns the paths written. Points at k = 0
// are left out (the axis is logarithmic).
func Write(dir string, results []cachesim.Result, title string) ([]string, error) {
	var written []string
	mr, err := curve(results, title, "miss rate", func(r cachesim.Result) float64 { return r.MissRate })
	if err != nil {
		return nil, err
	}
	mr.Y.Min, mr.Y.Max = 0, 1
	for _, ext := range []string{".png", ".svg"} {
		p := filepath.Join(dir, "missrate"+ext)
		if err := mr.Save(9*vg.Inch, 6*vg.Inch, p); err != nil {
			return written, fmt.Errorf("cacheplot: %w", err)
		}
		written = append(written, p)
	}
	hasMin := false
	for _, r := range results {
		hasMin = hasMin || !math.IsNaN(r.RelMin)
	}
	if !hasMin {
		return written, nil
	}
	rel, err := curve(results, title, "miss rate relative to MIN", func(r cachesim.Result) float64 { return r.RelMin })
	if err != nil {
		return written, err
	}
	rel.Y.Min = 1
	for _, ext := range []string{".png", ".svg"} {
		p := filepath.Join(dir, "relmin"+ext)
		if err := rel.Save(9*vg.Inch, 6*vg.Inch, p); err != nil {
			return written, fmt.Errorf("cacheplot: %w", err)
		}
		written = append(written, p)
	}
	return written, nil
}

func curve(results []cachesim.Result, title, ylabel string, y func(cachesim.Result) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "cache size k (entries)"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	var order []string
	pts := map[string]plotter.XYs{}
	for _, r := range results {
		v := y(r)
		if r.K <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if _, ok := pts[r.Algo]; !ok {
			order = append(order, r.Algo)
		}
		pts[r.Algo] = append(pts[r.Algo], plotter.XY{X: float64(r.K), Y: v})
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("cacheplot: no points to draw")
	}
	var args []any
	for _, a := range order {
		args = append(args, a, pts[a])
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return nil, fmt.Errorf("cacheplot: %w", err)
	}
	return p, nil
}
