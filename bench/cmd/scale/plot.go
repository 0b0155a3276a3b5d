package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotFiles are the figures plotSamples writes (each as .svg and .png).
var plotFiles = []string{"scale-rate", "scale-memory", "scale-per-url"}

type series struct {
	name string
	y    func(sample) float64
}

// plotSamples draws the samples against elapsed minutes into dir.
func plotSamples(dir string, samples []sample) error {
	if len(samples) < 2 {
		return errors.New("fewer than 2 samples: nothing to plot")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	figs := []struct {
		title, ylabel string
		lines         []series
	}{
		{"pages/s (between samples)", "pages/s", []series{{"pages/s", func(s sample) float64 { return s.PagesPerS }}}},
		{"crawler memory and disk", "MB", []series{
			{"RSS", func(s sample) float64 { return s.RSS / 1e6 }},
			{"Go heap (alloc)", func(s sample) float64 { return s.Heap / 1e6 }},
			{"frontier on disk", func(s sample) float64 { return s.FrontierDisk / 1e6 }},
			{"DUE on disk", func(s sample) float64 { return s.DUEDisk / 1e6 }},
		}},
		{"bytes per URL known (DUE set)", "bytes per URL", []series{
			{"RSS ÷ URLs", func(s sample) float64 { return s.RSSPerURL() }},
			{"frontier+DUE disk ÷ URLs", func(s sample) float64 { return s.DiskPerURL() }},
		}},
	}
	for i, f := range figs {
		p := plot.New()
		p.Title.Text = f.title
		p.X.Label.Text = "elapsed (min)"
		p.Y.Label.Text = f.ylabel
		p.Legend.Top = true
		p.Y.Min = 0
		p.Add(plotter.NewGrid())
		var args []any
		for _, l := range f.lines {
			pts := make(plotter.XYs, 0, len(samples))
			for _, s := range samples {
				pts = append(pts, plotter.XY{X: s.Elapsed / 60, Y: l.y(s)})
			}
			args = append(args, l.name, pts)
		}
		if err := plotutil.AddLines(p, args...); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		for _, ext := range []string{".svg", ".png"} {
			if err := p.Save(9*vg.Inch, 4*vg.Inch, filepath.Join(dir, plotFiles[i]+ext)); err != nil {
				return fmt.Errorf("plot: %w", err)
			}
		}
	}
	return nil
}
