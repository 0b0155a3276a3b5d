package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// jsonAt is a number at a dotted path of a JSON file ("dispatch.steals"),
// for the nested fields of the demo's report.
func (d *data) jsonAt(file, path string) (float64, error) {
	j, err := d.json(file)
	if err != nil {
		return 0, err
	}
	var v any = j
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, fmt.Errorf("%w: %s: %s", ErrNoData, file, path)
		}
		v = m[k]
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("%w: %s: %s", ErrNoData, file, path)
	}
	return f, nil
}

// pwAlgo is perWorker for one algorithm (dispatch.csv holds several).
func (d *data) pwAlgo(file, algo string, workers int, assignment string, k int) (float64, error) {
	rows, err := d.rows(file)
	if err != nil {
		return 0, err
	}
	for _, r := range rows {
		if r["algorithm"] == algo && r["workers"] == fmt.Sprint(workers) && r["assignment"] == assignment && r["k_total"] == fmt.Sprint(k) {
			return strconv.ParseFloat(r["miss_rate"], 64)
		}
	}
	return 0, fmt.Errorf("%w: %s %s W=%d %s k=%d", ErrNoData, file, algo, workers, assignment, k)
}

// jsonTrue is a top-level boolean of a JSON file (the demo's oracle_match).
func (d *data) jsonTrue(file, field string) (bool, error) {
	j, err := d.json(file)
	if err != nil {
		return false, err
	}
	v, ok := j[field].(bool)
	if !ok {
		return false, fmt.Errorf("%w: %s: %s", ErrNoData, file, field)
	}
	return v, nil
}

// pwMin is the lowest miss rate of a perworker.csv row set over all sizes.
func (d *data) pwMin(file string, workers int, assignment string) (float64, error) {
	rows, err := d.rows(file)
	if err != nil {
		return 0, err
	}
	best, n := 2.0, 0
	for _, r := range rows {
		if r["workers"] == strconv.Itoa(workers) && r["assignment"] == assignment {
			v, err := strconv.ParseFloat(r["miss_rate"], 64)
			if err != nil {
				return 0, fmt.Errorf("studydoc: %s: %w", file, err)
			}
			best, n = min(best, v), n+1
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: %s W=%d %s", ErrNoData, file, workers, assignment)
	}
	return best, nil
}

// jsonRange is the range of a top-level number over JSON files.
func (d *data) jsonRange(field string, files ...string) (span, error) {
	s := span{Lo: math.Inf(1), Hi: math.Inf(-1)}
	for _, f := range files {
		v, err := d.jsonNum(f, field)
		if err != nil {
			return span{}, err
		}
		s.Lo, s.Hi = min(s.Lo, v), max(s.Hi, v)
	}
	return s, nil
}
