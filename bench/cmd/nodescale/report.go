package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// report is every run of one invocation.
type report struct {
	Started               time.Time
	LoadBefore, LoadAfter string
	Shape                 string
	Oracle                int
	Opts                  options `json:"-"`
	Runs                  []runResult
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

func (r runResult) cpu() float64 { return sum(r.CPU) }

func (r runResult) summary() string {
	if r.Err != "" {
		return fmt.Sprintf("N=%d rep %d: FAILED: %s", r.N, r.Rep, r.Err)
	}
	return fmt.Sprintf("N=%d rep %d: %d pages in %.1f s = %.0f pages/s per node (steady %.0f); CPU %.1f s (%.2f cores/node, throttled %.1f s); %0.f cross URLs sent, %.0f wire B; split+gRPC %.1f%% of samples (perf sampled %.0f%% of the cgroups' CPU, %d chunks lost); missing %d extra %d twice %d; load %s",
		r.N, r.Rep, r.Pages, r.Wall, r.perNodeRate(), r.SteadyRate/float64(r.N), r.cpu(), r.cpu()/r.Wall/float64(r.N), sum(r.Throttled),
		r.Sent, r.WireBytes, 100*r.clusterShare(), 100*r.Prof.Total/max(r.cpu(), 1e-9), r.Prof.Lost, r.Missing, r.Extra, r.Twice, r.Load)
}

func (r runResult) clusterShare() float64 {
	if r.Prof.Total == 0 {
		return 0
	}
	return r.Prof.Cluster / r.Prof.Total
}

// cpuPerCross is the CPU (s) the cluster's work costs per cross URL sent,
// both ends: the profile's share of split+gRPC+protobuf stacks applied to
// the cgroups' measured CPU.
func (r runResult) cpuPerCross() float64 {
	if r.Sent == 0 {
		return 0
	}
	return r.clusterShare() * r.cpu() / r.Sent
}

// byN averages the successful runs of size n.
func (rep *report) byN(n int) (runResult, bool) {
	var a runResult
	k := 0
	for _, r := range rep.Runs {
		if r.N != n || r.Err != "" {
			continue
		}
		if k == 0 {
			a = r
			// Summed into below: neither r's slice nor r's map.
			a.CPU = append([]float64(nil), r.CPU...)
			a.Prof.Roots = nil
			a.Prof.plus(cpuSplit{Roots: r.Prof.Roots})
		} else {
			a.Wall += r.Wall
			a.Pages += r.Pages
			a.Sent += r.Sent
			a.Discovered += r.Discovered
			a.Suppressed += r.Suppressed
			a.WireBytes += r.WireBytes
			a.WirePackets += r.WirePackets
			a.AppBytes += r.AppBytes
			a.SteadyRate += r.SteadyRate
			a.Prof.plus(r.Prof)
			for i := range a.CPU {
				a.CPU[i] += r.CPU[i]
			}
		}
		k++
	}
	if k > 1 {
		a.SteadyRate /= float64(k)
	}
	return a, k > 0
}

// model is the cost model fitted to measured costs (see docs/bench/scaling.md).
type model struct {
	C1 float64 // CPU s per page on one node
	U  float64 // cores a node obtained (CPU s per wall s) at N = 1
	// K is the CPU s a cross URL costs the cluster, sender + receiver,
	// all-in: the growth of the cgroups' CPU per page from N = 1 to FitN,
	// divided by the cross URLs sent per page. KProf is the part of it
	// the profile finds in split+gRPC+protobuf stacks.
	K, KProf float64
	D        float64 // cross-host links per page, all hosts elsewhere (N → ∞), before the caches
	H        float64 // share of cross links the per-peer caches suppress
	B        float64 // wire bytes per cross URL sent
	FitN     int     // the cluster size K, D, H and B come from
	Valid    bool
}

// fit takes C1 and U from the N = 1 runs and the cross costs from the
// smallest N > 1 measured, so that a larger measured N checks the model.
func (rep *report) fit() model {
	one, ok := rep.byN(1)
	if !ok || one.Pages == 0 {
		return model{}
	}
	m := model{C1: one.cpu() / float64(one.Pages), U: one.cpu() / one.Wall}
	for _, run := range rep.Runs {
		n := run.N
		if n < 2 {
			continue
		}
		r, ok := rep.byN(n)
		if !ok || r.Sent == 0 || r.Discovered == 0 {
			continue
		}
		if m.FitN == 0 || n < m.FitN {
			m.FitN = n
			perPage := r.Sent / float64(r.Pages)
			m.K = (r.cpu()/float64(r.Pages) - m.C1) / perPage
			m.KProf = r.cpuPerCross()
			m.D = r.Discovered / float64(r.Pages) * float64(n) / float64(n-1)
			m.H = r.Suppressed / r.Discovered
			m.B = r.WireBytes / r.Sent
		}
	}
	m.Valid = m.FitN > 0
	return m
}

// sentPerPage is the cross URLs sent per page fetched at N nodes.
func (m model) sentPerPage(n int) float64 {
	return m.D * float64(n-1) / float64(n) * (1 - m.H)
}

// cpuPerPage is the predicted CPU s per page at N nodes.
func (m model) cpuPerPage(n int) float64 { return m.C1 + m.sentPerPage(n)*m.K }

// rate is the predicted pages/s per node at N nodes, each with U cores.
func (m model) rate(n int) float64 { return m.U / m.cpuPerPage(n) }

// handEnd closes the region of BENCHMARKS.md that `make bench`
// (bench/cmd/benchall) keeps verbatim; a new section goes just before it.
const handEnd = "<!-- hand-written: end -->"

// writeSection replaces the node-scaling section of path, or adds it (at
// the end of the hand-written region, else at the end of the file).
func (rep *report) writeSection(path string) error {
	const begin, end = "<!-- nodescale:begin -->", "<!-- nodescale:end -->"
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	sec := begin + "\n" + rep.markdown() + end + "\n"
	s := string(old)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i >= 0 && j > i {
		s = s[:i] + sec + strings.TrimPrefix(s[j+len(end):], "\n")
	} else if k := strings.Index(s, handEnd); k >= 0 {
		// Inside `make bench`'s hand-written region, which it keeps verbatim.
		s = s[:k] + sec + "\n" + s[k:]
	} else {
		if s != "" && !strings.HasSuffix(s, "\n\n") {
			s += "\n"
		}
		s += sec
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
