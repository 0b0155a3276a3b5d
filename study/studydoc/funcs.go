package main

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"text/template"
)

// gap is a signed difference of two curves in miss-rate points at size K.
type gap struct {
	Pts float64
	K   int
}

// span is the range of a quantity over some sizes.
type span struct{ Lo, Hi float64 }

// funcs are the template's functions: every number in the document is one
// of their results.
func (d *data) funcs() template.FuncMap {
	return template.FuncMap{
		"pct":          func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" },
		"pts":          signed,
		"frac":         func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
		"pts1":         func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
		"x":            func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) + "×" },
		"num":          groupDigits,
		"ns":           func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) },
		"kexp":         kexp,
		"abs":          math.Abs,
		"rate":         func(f, a string, k int) (float64, error) { p, err := d.at(f, a, k); return p.rate, err },
		"requests":     d.requests,
		"distinct":     d.distinct,
		"share":        func(a, b uint64) float64 { return float64(a) / float64(b) },
		"has":          d.has,
		"exists":       d.exists,
		"curveTable":   d.curveTable,
		"devTable":     d.devTable,
		"maxGap":       d.maxGap,
		"gapRange":     d.gapRange,
		"ratioRange":   d.ratioRange,
		"firstK":       d.firstK,
		"minOver":      d.minOver,
		"pw":           d.perWorker,
		"json":         d.jsonNum,
		"jsonAt":       d.jsonAt,
		"pwa":          d.pwAlgo,
		"jsonTrue":     d.jsonTrue,
		"bench":        func(name string) (float64, error) { s, err := d.benchSamples(name); return median(s), err },
		"ints":         ints,
		"div":          func(a, b float64) float64 { return a / b },
		"sub":          func(a, b float64) float64 { return a - b },
		"hit":          func(f float64) float64 { return 1 - f },
		"list":         func(s ...string) []string { return s },
		"fields":       strings.Fields,
		"mul":          func(a string, b int) int { return atoi(a) * b },
		"ksOf":         d.ksOf,
		"fileGap":      d.fileGap,
		"pwGap":        d.pwGap,
		"minRate":      d.minRate,
		"worstGap":     d.worstGap,
		"float":        func(v any) float64 { f, _ := strconv.ParseFloat(fmt.Sprint(v), 64); return f },
		"pctShort":     func(f float64) string { return strconv.FormatFloat(100*f, 'f', -1, 64) + "%" },
		"kcols":        func(ks string) (string, error) { return cols(ks, kexp) },
		"ncols":        func(ks string) (string, error) { return cols(ks, strconv.Itoa) },
		"imul":         func(a, b int) int { return a * b },
		"idiv":         func(a, b int) int { return a / b },
		"int":          func(v float64) int { return int(math.Round(v)) },
		"upper":        strings.ToUpper,
		"lowestOver":   d.lowestOver,
		"add":          func(a, b float64) float64 { return a + b },
		"jsonHas":      func(file, field string) bool { j, err := d.json(file); return err == nil && j[field] != nil },
		"ksList":       d.ks,
		"last":         func(s []int) int { return s[len(s)-1] },
		"algos":        d.algos,
		"pwMin":        d.pwMin,
		"must":         must,
		"pwRequests":   d.pwRequests,
		"stepDone":     d.stepDone,
		"benchSamples": d.benchSamples,
		"jsonRange":    d.jsonRange,
	}
}

// groupDigits writes n with a space between groups of three digits.
func groupDigits(n any) string {
	s := fmt.Sprint(n)
	if f, ok := n.(float64); ok {
		s = strconv.FormatFloat(math.Round(f), 'f', 0, 64)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// signed writes a difference in points with its sign, 0.00 unsigned.
func signed(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	switch {
	case s == "0.00" || s == "-0.00":
		return "0.00"
	case f > 0:
		return "+" + s
	}
	return s
}

// kexp writes a power of two as 2^e, any other size as a number.
func kexp(k int) string {
	if k > 0 && k&(k-1) == 0 {
		return "2^" + strconv.Itoa(bits.TrailingZeros(uint(k)))
	}
	return strconv.Itoa(k)
}

// ints parses "8,16,32" for the template.
func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// requests is the length of the trace behind a results.csv.
func (d *data) requests(file string) (uint64, error) {
	p, err := d.at(file, "infinite", 1)
	return p.requests, err
}

// distinct is the number of distinct fingerprints: INFINITE's misses.
func (d *data) distinct(file string) (uint64, error) {
	p, err := d.at(file, "infinite", 1)
	return p.misses, err
}

// curveTable writes the rows of a markdown table of miss rates, one row per
// "Label=algorithm" of rows, one column per size of ks ("floor" is the
// largest simulated size).
func (d *data) curveTable(file, ks string, rows ...string) (string, error) {
	var b strings.Builder
	for _, r := range rows {
		label, algo, _ := strings.Cut(r, "=")
		fmt.Fprintf(&b, "| %s |", label)
		for _, f := range strings.Split(ks, ",") {
			k, err := d.sizeOf(file, algo, f)
			if err != nil {
				return "", err
			}
			p, err := d.at(file, algo, k)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, " %.1f%% |", 100*p.rate)
		}
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func (d *data) sizeOf(file, algo, f string) (int, error) {
	if f != "floor" {
		return strconv.Atoi(f)
	}
	all, err := d.ks(file, algo)
	if err != nil {
		return 0, err
	}
	return all[len(all)-1], nil
}

// devTable writes, per size of ks, the production CLOCK's miss rate, the
// exact CLOCKs', and its deviations from them in points.
func (d *data) devTable(file, ks string) (string, error) {
	sizes, err := ints(ks)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, k := range sizes {
		c, err1 := d.at(file, "clock", k)
		e, err2 := d.at(file, "clock-exact", k)
		m, err3 := d.at(file, "clock-exact-marked", k)
		if err := errors.Join(err1, err2, err3); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "| %s | %.1f%% | %.1f%% | %.1f%% | %s | %s |\n", kexp(k),
			100*c.rate, 100*e.rate, 100*m.rate, signed(100*(c.rate-e.rate)), signed(100*(c.rate-m.rate)))
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// common returns the sizes both curves have in [lo, hi] (hi ≤ 0: no bound).
func (d *data) common(file, a, b string, lo, hi int) ([]int, error) {
	ka, err := d.ks(file, a)
	if err != nil {
		return nil, err
	}
	if _, err := d.ks(file, b); err != nil {
		return nil, err
	}
	var out []int
	for _, k := range ka {
		if _, err := d.at(file, b, k); err == nil && k >= lo && (hi <= 0 || k <= hi) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: no common sizes of %s and %s", ErrNoData, file, a, b)
	}
	return out, nil
}

// maxGap is the largest |a − b| in points over all common sizes, signed.
func (d *data) maxGap(file, a, b string) (gap, error) {
	ks, err := d.common(file, a, b, 0, 0)
	if err != nil {
		return gap{}, err
	}
	var g gap
	for _, k := range ks {
		pa, _ := d.at(file, a, k)
		pb, _ := d.at(file, b, k)
		if v := 100 * (pa.rate - pb.rate); math.Abs(v) > math.Abs(g.Pts) {
			g = gap{v, k}
		}
	}
	return g, nil
}

// gapRange is the range of a − b in points over the common sizes in [lo, hi].
func (d *data) gapRange(file, a, b string, lo, hi int) (span, error) {
	return d.over(file, a, b, lo, hi, func(x, y float64) float64 { return 100 * (x - y) })
}

// ratioRange is the range of a / b over the common sizes in [lo, hi].
func (d *data) ratioRange(file, a, b string, lo, hi int) (span, error) {
	return d.over(file, a, b, lo, hi, func(x, y float64) float64 { return x / y })
}

func (d *data) over(file, a, b string, lo, hi int, f func(x, y float64) float64) (span, error) {
	ks, err := d.common(file, a, b, lo, hi)
	if err != nil {
		return span{}, err
	}
	s := span{math.Inf(1), math.Inf(-1)}
	for _, k := range ks {
		pa, _ := d.at(file, a, k)
		pb, _ := d.at(file, b, k)
		v := f(pa.rate, pb.rate)
		s.Lo, s.Hi = min(s.Lo, v), max(s.Hi, v)
	}
	return s, nil
}

// firstK is the smallest size at which algo's miss rate is ≤ target (0 if
// none).
func (d *data) firstK(file, algo string, target float64) (int, error) {
	ks, err := d.ks(file, algo)
	if err != nil {
		return 0, err
	}
	for _, k := range ks {
		if p, _ := d.at(file, algo, k); p.rate <= target {
			return k, nil
		}
	}
	return 0, nil
}

// minOver is the lowest miss rate of the algorithms at sizes ≤ kmax.
func (d *data) minOver(file string, kmax int, algos ...string) (float64, error) {
	best := math.Inf(1)
	for _, a := range algos {
		ks, err := d.ks(file, a)
		if err != nil {
			return 0, err
		}
		for _, k := range ks {
			if p, _ := d.at(file, a, k); k <= kmax && p.rate < best {
				best = p.rate
			}
		}
	}
	return best, nil
}

// perWorker is the miss rate of a perworker.csv row.
func (d *data) perWorker(file string, workers int, assignment string, k int) (float64, error) {
	rows, err := d.rows(file)
	if err != nil {
		return 0, err
	}
	for _, r := range rows {
		if r["workers"] == strconv.Itoa(workers) && r["assignment"] == assignment && r["k_total"] == strconv.Itoa(k) {
			return strconv.ParseFloat(r["miss_rate"], 64)
		}
	}
	return 0, fmt.Errorf("%w: %s W=%d %s k=%d", ErrNoData, file, workers, assignment, k)
}

// jsonNum is a top-level number of a JSON file.
func (d *data) jsonNum(file, field string) (float64, error) {
	j, err := d.json(file)
	if err != nil {
		return 0, err
	}
	v, ok := j[field].(float64)
	if !ok {
		return 0, fmt.Errorf("%w: %s: %s", ErrNoData, file, field)
	}
	return v, nil
}

// fileGap compares algo's curves in two files over the sizes both have in
// [lo, hi]: the largest |a − b| and the mean |a − b|, as fractions.
func (d *data) fileGap(fa, fb, algo string, lo, hi int) (span, error) {
	ka, err := d.ks(fa, algo)
	if err != nil {
		return span{}, err
	}
	var worst, sum float64
	n := 0
	for _, k := range ka {
		pb, err := d.at(fb, algo, k)
		if err != nil || k < lo || (hi > 0 && k > hi) {
			continue
		}
		pa, _ := d.at(fa, algo, k)
		v := math.Abs(pa.rate - pb.rate)
		worst, sum, n = max(worst, v), sum+v, n+1
	}
	if n == 0 {
		return span{}, fmt.Errorf("%w: %s and %s share no size", ErrNoData, fa, fb)
	}
	return span{Lo: sum / float64(n), Hi: worst}, nil
}

// pwGap is the largest |a − b| in points between two rows of perworker.csv
// over the sizes both have.
func (d *data) pwGap(file string, wa int, aa string, wb int, ab string) (gap, error) {
	rows, err := d.rows(file)
	if err != nil {
		return gap{}, err
	}
	at := map[string]map[string]float64{}
	for _, r := range rows {
		key := r["workers"] + "/" + r["assignment"]
		if at[key] == nil {
			at[key] = map[string]float64{}
		}
		v, err := strconv.ParseFloat(r["miss_rate"], 64)
		if err != nil {
			return gap{}, err
		}
		at[key][r["k_total"]] = v
	}
	a, b := at[strconv.Itoa(wa)+"/"+aa], at[strconv.Itoa(wb)+"/"+ab]
	var g gap
	n := 0
	for k, va := range a {
		vb, ok := b[k]
		if !ok {
			continue
		}
		n++
		if v := 100 * (va - vb); math.Abs(v) > math.Abs(g.Pts) {
			g.Pts, g.K = v, atoi(k)
		}
	}
	if n == 0 {
		return gap{}, fmt.Errorf("%w: %s: no common sizes", ErrNoData, file)
	}
	return g, nil
}

func atoi(s string) int { v, _ := strconv.Atoi(s); return v }

// minRate is the lowest miss rate of algo at size k over the files.
func (d *data) minRate(algo string, k int, files ...string) (float64, error) {
	best := math.Inf(1)
	for _, f := range files {
		p, err := d.at(f, algo, k)
		if err != nil {
			return 0, err
		}
		best = min(best, p.rate)
	}
	return best, nil
}

// ksOf lists the sizes of a results.csv's clock curve, comma-separated, up
// to the first that holds every distinct fingerprint (beyond it no policy
// evicts, so every curve is flat).
func (d *data) ksOf(file string) (string, error) {
	ks, err := d.ks(file, "clock")
	if err != nil {
		return "", err
	}
	n, err := d.distinct(file)
	if err != nil {
		return "", err
	}
	var s []string
	for _, k := range ks {
		s = append(s, strconv.Itoa(k))
		if uint64(k) >= n {
			break
		}
	}
	return strings.Join(s, ","), nil
}

// fileGapK is a gap with the trace it was found on.
type fileGapK struct {
	gap
	Trace string
}

// worstGap is the largest |a − b| over the traces (directories under the
// data dir holding results.csv) that have both curves; Trace is "" if none.
func (d *data) worstGap(a, b string, traces []string) (fileGapK, error) {
	var w fileGapK
	for _, t := range traces {
		f := t + "/results.csv"
		if !d.has(f, a) || !d.has(f, b) {
			continue
		}
		g, err := d.maxGap(f, a, b)
		if err != nil {
			return w, err
		}
		if w.Trace == "" || math.Abs(g.Pts) > math.Abs(w.Pts) {
			w = fileGapK{g, t}
		}
	}
	return w, nil
}
