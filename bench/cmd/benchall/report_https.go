package main

import (
	"bytes"
	"fmt"
)

// The HTTPS section of the report (issue 24): the same contenders on the
// web with the presets' HTTPS hosts, each Sextant row with its ratio to
// the TLS ceiling and its target.

// The HTTPS rows compared with the TLS ceiling, and their target.
var (
	httpsRows       = []string{"sextant-https", "sextant-f0-https"}
	httpsTarget     = 0.7
	httpsTargetWant = "≥ 0.7"
	httpsTargetWhat = map[string]string{
		"sextant-https":    "HTTPS: Sextant pages/s ÷ TLS ceiling pages/s",
		"sextant-f0-https": "HTTPS, `--factor 0` (no politeness, as the TLS ceiling): Sextant pages/s ÷ TLS ceiling pages/s",
	}
)

// httpsTargetOf returns the target computed for the HTTPS row kind.
func (rp *report) httpsTargetOf(kind string) (target, bool) {
	for _, t := range rp.targets {
		if t.what == httpsTargetWhat[kind] {
			return t, true
		}
	}
	return target{}, false
}

// writeHTTPS writes the HTTPS row: the same contenders on the same web
// with the presets' HTTPS hosts (a second simweb process), so that the
// ratio prices what TLS costs Sextant beyond what it costs any client.
func (rp *report) writeHTTPS(b *bytes.Buffer) {
	sh, ch := rp.med["sextant-https"], rp.med["ceiling-https"]
	if rp.WebHTTPS == "" {
		return
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("### HTTPS (issue 24)\n\n")
	w("- **Web**: %s; certificates from the CA simweb makes at start (`--ca-out`), trusted by both (`--ca-file`). ", rp.WebHTTPS)
	w("Links to HTTPS hosts are https; a share of links to the hosts that redirect http→https are http:// (a 301 each, in the oracle's set).\n")
	w("- Same settings as above; the TLS ceiling fetches the oracle's list over TLS with Go's net/http (HTTP/2 where a host offers it by ALPN, one connection per host) with no politeness delay; Sextant keeps its default politeness factor, and the `--factor 0` row (`sextant-f0-https`) has none, like the ceiling: the like-for-like row.\n\n")
	w("| contender | runs | pages/s | ÷ TLS ceiling (target %s) | CPU s per 1,000 pages | simweb CPU s per 1,000 pages | peak RSS MiB | distinct URLs (oracle %d) | missing | extra | fetched twice |\n", httpsTargetWant, rp.OracleHTTPS)
	w("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range []string{"ceiling-https", "sextant-https", "sextant-f0-https"} {
		m := rp.med[k]
		if !rp.ran(k) {
			continue
		}
		if m.n == 0 {
			w("| %s | 0 | failed | | | | | | | | |\n", kindNames[k])
			continue
		}
		vs := ""
		if t, ok := rp.httpsTargetOf(k); ok {
			vs = fmt.Sprintf("%.2f, not measured", t.value)
			if t.ok {
				vs = fmt.Sprintf("**%.2f**, not met", t.value)
			}
			if t.met {
				vs = fmt.Sprintf("**%.2f**, met", t.value)
			}
		}
		w("| %s | %d | %.0f | %s | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", kindNames[k], m.n, m.pps, vs, m.cpu, m.srv, mib(m.rss),
			m.distinct, m.missing, m.extra, m.twice)
	}
	w("\nSextant ÷ TLS ceiling **%.2f** in pages/s, %.2f in CPU per page", ratio(sh.pps, ch.pps), ratio(sh.cpu, ch.cpu))
	if f0 := rp.med["sextant-f0-https"]; f0.n > 0 {
		w("; without the politeness factor (`--factor 0`) **%.2f** in pages/s", ratio(f0.pps, ch.pps))
	}
	if s, c := rp.med["sextant"], rp.med["ceiling"]; s.n > 0 && c.n > 0 && sh.n > 0 && ch.n > 0 {
		w("; TLS costs the ceiling %.2f× and Sextant %.2f× the CPU per page of plain HTTP", ratio(ch.cpu, c.cpu), ratio(sh.cpu, s.cpu))
	}
	w(".\n\n")
}
