package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHTTPSTargetPerRow: the report computes the ÷ TLS ceiling ratio and
// the 0.7 target for each HTTPS row — Sextant with its default politeness
// and with --factor 0, the like-for-like row (the TLS ceiling has no
// politeness) — and writes each row's ratio in the HTTPS table.
func TestHTTPSTargetPerRow(t *testing.T) {
	rp := &report{
		Opts:        options{kinds: []string{"ceiling", "sextant", "ceiling-https", "sextant-https", "sextant-f0-https"}, workers: 4, nodeWorkers: 2},
		WebHTTPS:    "a web",
		OracleHTTPS: 1000,
		Rounds:      1,
		Runs: []result{
			{Kind: "ceiling", Rep: 1, Wall: 1, Pages: 1000, Distinct: 1000, CPU: 1, OracleSize: 1000},
			{Kind: "sextant", Rep: 1, Wall: 2, Pages: 1000, Distinct: 1000, CPU: 2, OracleSize: 1000},
			{Kind: "ceiling-https", Rep: 1, Wall: 1, Pages: 1000, Distinct: 1000, CPU: 1, OracleSize: 1000},
			{Kind: "sextant-https", Rep: 1, Wall: 2, Pages: 1000, Distinct: 1000, CPU: 2, OracleSize: 1000},       // 0.5
			{Kind: "sextant-f0-https", Rep: 1, Wall: 1.25, Pages: 1000, Distinct: 1000, CPU: 2, OracleSize: 1000}, // 0.8
		}}
	rp.compute()
	for _, c := range []struct {
		kind string
		want float64
		met  bool
		cell string
	}{{"sextant-https", 0.5, false, "**0.50**, not met"}, {"sextant-f0-https", 0.8, true, "**0.80**, met"}} {
		tg, ok := rp.httpsTargetOf(c.kind)
		if !ok {
			t.Errorf("%s: no target computed; targets %+v", c.kind, rp.targets)
			continue
		}
		if !tg.ok || tg.value != c.want || tg.met != c.met {
			t.Errorf("%s: target %+v, want value %v met %v", c.kind, tg, c.want, c.met)
		}
		var b bytes.Buffer
		rp.writeHTTPS(&b)
		if row := lineWith(b.String(), "| "+kindNames[c.kind]+" |"); !strings.Contains(row, "| "+c.cell+" |") {
			t.Errorf("%s: row %q has no cell %q:\n%s", c.kind, row, c.cell, b.String())
		}
	}

	// A row asked for that failed is "not measured"; a row not asked for
	// has no target.
	rp.Opts.kinds = []string{"ceiling-https", "sextant-https"}
	rp.Runs[3].Err = "killed"
	rp.targets = nil
	rp.compute()
	if tg, ok := rp.httpsTargetOf("sextant-https"); !ok || tg.ok || tg.met {
		t.Errorf("failed sextant-https: target %+v (found %v), want not measured", tg, ok)
	}
	if tg, ok := rp.httpsTargetOf("sextant-f0-https"); ok {
		t.Errorf("sextant-f0-https not asked for, yet a target %+v", tg)
	}
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestSextantArgs: -sextant-args go last on a single-node run's command
// line (so they override the harness's flags: Go's flag package keeps the
// last value), after the kind's own and the CA, and the report says the
// rows did not measure the defaults; without them it says nothing.
func TestSextantArgs(t *testing.T) {
	o := options{workers: 8, sextantArgs: strings.Fields(" --due-flush 100ms  --min-delay 1s ")}
	got := crawlArgs(o, "sim.test", "127.0.0.1:1", "seeds.txt", "ca.pem", "data", []string{"--factor", "0"})
	tail := strings.Join(got[len(got)-8:], " ")
	if want := "--factor 0 --ca-file ca.pem --due-flush 100ms --min-delay 1s"; tail != want {
		t.Fatalf("command line ends %q, want %q (all: %q)", tail, want, got)
	}
	if strings.Join(got[:2], " ") != "crawl --seeds" {
		t.Fatalf("command line %q", got)
	}
	for _, args := range [][]string{nil, o.sextantArgs} {
		rp := &report{Opts: options{kinds: []string{"sextant"}, workers: 8, nodeWorkers: 3, sextantArgs: args}}
		rp.compute()
		var b bytes.Buffer
		rp.writeTable(&b)
		has := strings.Contains(b.String(), "`--due-flush 100ms --min-delay 1s`")
		if has != (args != nil) || strings.Contains(b.String(), "-sextant-args") != (args != nil) {
			t.Errorf("sextant-args %q: report mentions them %v:\n%s", args, has, b.String())
		}
	}
}
