package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ErrNoData is wrapped when the template asks for a point the data lacks.
var ErrNoData = errors.New("studydoc: no such data point")

// data reads the study's committed files under dir, each once.
type data struct {
	dir    string
	curves map[string]map[string]map[int]point // file → algorithm → k → point
	tables map[string][]map[string]string      // CSV file → rows by column name
	jsons  map[string]map[string]any
	bench  map[string][]float64 // benchmark name → ns/op samples
}

// point is one row of a cachesim results.csv.
type point struct {
	requests, misses uint64
	rate             float64
}

func newData(dir string) *data {
	return &data{dir: dir, curves: map[string]map[string]map[int]point{},
		tables: map[string][]map[string]string{}, jsons: map[string]map[string]any{}}
}

// rows reads a CSV file with a header into maps keyed by column name.
func (d *data) rows(file string) ([]map[string]string, error) {
	if r, ok := d.tables[file]; ok {
		return r, nil
	}
	f, err := os.Open(filepath.Join(d.dir, file))
	if err != nil {
		return nil, fmt.Errorf("studydoc: %w", err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		return nil, fmt.Errorf("studydoc: %s: %w", file, errors.Join(err, ErrNoData))
	}
	var out []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			if i < len(rec) {
				m[h] = rec[i]
			}
		}
		out = append(out, m)
	}
	d.tables[file] = out
	return out, nil
}

// curve returns the points of a cachesim results.csv.
func (d *data) curve(file string) (map[string]map[int]point, error) {
	if c, ok := d.curves[file]; ok {
		return c, nil
	}
	rows, err := d.rows(file)
	if err != nil {
		return nil, err
	}
	c := map[string]map[int]point{}
	for _, r := range rows {
		k, err1 := strconv.Atoi(r["k"])
		req, err2 := strconv.ParseUint(r["requests"], 10, 64)
		mis, err3 := strconv.ParseUint(r["misses"], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("studydoc: %s: %w", file, err)
		}
		if c[r["algorithm"]] == nil {
			c[r["algorithm"]] = map[int]point{}
		}
		c[r["algorithm"]][k] = point{req, mis, float64(mis) / float64(max(req, 1))}
	}
	d.curves[file] = c
	return c, nil
}

// at returns one point of a curve.
func (d *data) at(file, algo string, k int) (point, error) {
	c, err := d.curve(file)
	if err != nil {
		return point{}, err
	}
	p, ok := c[algo][k]
	if !ok {
		return point{}, fmt.Errorf("%w: %s %s k=%d", ErrNoData, file, algo, k)
	}
	return p, nil
}

// ks returns the sizes of algo's curve, ascending.
func (d *data) ks(file, algo string) ([]int, error) {
	c, err := d.curve(file)
	if err != nil {
		return nil, err
	}
	if len(c[algo]) == 0 {
		return nil, fmt.Errorf("%w: %s has no %s", ErrNoData, file, algo)
	}
	var ks []int
	for k := range c[algo] {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks, nil
}

// has reports whether file exists and, for a curve, holds algo.
func (d *data) has(file, algo string) bool {
	c, err := d.curve(file)
	return err == nil && len(c[algo]) > 0
}

// json reads a JSON object file.
func (d *data) json(file string) (map[string]any, error) {
	if j, ok := d.jsons[file]; ok {
		return j, nil
	}
	b, err := os.ReadFile(filepath.Join(d.dir, file))
	if err != nil {
		return nil, fmt.Errorf("studydoc: %w", err)
	}
	var j map[string]any
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("studydoc: %s: %w", file, err)
	}
	d.jsons[file] = j
	return j, nil
}

// benchSamples reads the go test -bench output bench-lookup.txt: ns/op per
// benchmark name (without the -GOMAXPROCS suffix).
func (d *data) benchSamples(name string) ([]float64, error) {
	if d.bench == nil {
		d.bench = map[string][]float64{}
		f, err := os.Open(filepath.Join(d.dir, "bench-lookup.txt"))
		if err != nil {
			return nil, fmt.Errorf("studydoc: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 4 || !strings.HasPrefix(fs[0], "Benchmark") || fs[3] != "ns/op" {
				continue
			}
			v, err := strconv.ParseFloat(fs[2], 64)
			if err != nil {
				return nil, fmt.Errorf("studydoc: bench-lookup.txt: %w", err)
			}
			n := fs[0]
			if i := strings.LastIndexByte(n, '-'); i > 0 {
				n = n[:i]
			}
			d.bench[n] = append(d.bench[n], v)
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	s := d.bench[name]
	if len(s) == 0 {
		return nil, fmt.Errorf("%w: benchmark %s", ErrNoData, name)
	}
	return s, nil
}

// median of the samples.
func median(s []float64) float64 {
	s = slices.Clone(s)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// exists reports whether a file or directory is under the data dir.
func (d *data) exists(file string) bool {
	_, err := fs.Stat(os.DirFS(d.dir), file)
	return err == nil
}
