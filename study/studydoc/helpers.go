package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// must fails the rendering when a fact the template assumes (a run
// parameter it names) disagrees with the data.
func must(ok bool, msg string) (string, error) {
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrNoData, msg)
	}
	return "", nil
}

// cols writes the header cells of a table over the sizes ks ("floor" as
// is), each formatted by f: " 2^8 | 2^10 | floor |".
func cols(ks string, f func(int) string) (string, error) {
	var b strings.Builder
	for _, s := range strings.Split(ks, ",") {
		if s == "floor" {
			b.WriteString(" floor |")
			continue
		}
		k, err := strconv.Atoi(s)
		if err != nil {
			return "", err
		}
		b.WriteString(" " + f(k) + " |")
	}
	return b.String(), nil
}

// algos lists the algorithms of a results.csv.
func (d *data) algos(file string) ([]string, error) {
	c, err := d.curve(file)
	if err != nil {
		return nil, err
	}
	var out []string
	for a := range c {
		out = append(out, a)
	}
	sort.Strings(out)
	return out, nil
}

// lowestOver is the algorithm with the lowest miss rate at some size ≤ kmax.
func (d *data) lowestOver(file string, kmax int, algos ...string) (string, error) {
	best, name := math.Inf(1), ""
	for _, a := range algos {
		r, err := d.minOver(file, kmax, a)
		if err != nil {
			return "", err
		}
		if r < best {
			best, name = r, a
		}
	}
	return name, nil
}

// pwRequests is the trace length behind a perworker.csv (its first row's
// requests): equal to the sweep's when both replayed the same trace.
func (d *data) pwRequests(file string) (uint64, error) {
	rows, err := d.rows(file)
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, fmt.Errorf("%w: %s is empty", ErrNoData, file)
	}
	return strconv.ParseUint(rows[0]["requests"], 10, 64)
}

// stepDone is when study/run.sh last finished step (its steps.csv: step,
// finished, load), or "" if steps.csv does not record it.
func (d *data) stepDone(step string) string {
	if !d.exists("steps.csv") {
		return ""
	}
	rows, err := d.rows("steps.csv")
	if err != nil {
		return ""
	}
	last := ""
	for _, r := range rows {
		if r["step"] == step {
			last = r["finished"]
		}
	}
	return last
}
