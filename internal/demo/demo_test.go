package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/cache/cachesim"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
	"github.com/sextant-crawler/sextant/simweb"
)

// The demo on a small web: two nodes crawl exactly the oracle's set, and the
// report (text and JSON) carries the figures the README promises.
func TestDemoSmallWebMatchesOracle(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	jsonPath := filepath.Join(dir, "report.json")
	var statusJSON map[string]any
	ready := func(url string) {
		time.Sleep(1500 * time.Millisecond) // let the handler take a sample or two
		resp, err := http.Get(url + "node-0/status.json?cluster=1")
		if err != nil {
			t.Errorf("status page: %v", err)
			return
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&statusJSON); err != nil {
			t.Errorf("status.json: %v", err)
		}
	}
	rep, err := Run(ctx, Options{StatusReady: ready, Web: simweb.SmallConfig(), Nodes: 2, Workers: 8, DataDir: filepath.Join(dir, "data"),
		ReportJSON: jsonPath, Progress: 2 * time.Second, Traces: true, WARCDir: filepath.Join(dir, "warc")}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	if !rep.OracleMatch || rep.FetchedTwice != 0 {
		t.Fatalf("oracle match %v, fetched twice %d: %s", rep.OracleMatch, rep.FetchedTwice, rep.OracleDiff)
	}
	if len(rep.PerNode) != 2 || rep.PerNode[0].Fetches == 0 || rep.PerNode[1].Fetches == 0 {
		t.Fatalf("per-node figures: %+v", rep.PerNode)
	}
	if rep.LocalShare <= 0 || rep.LocalShare >= 1 || rep.WireBytesPerURL <= 0 || rep.DUEBytesPerURL <= 0 {
		t.Errorf("implausible report figures: %+v", rep)
	}
	for _, want := range []string{"EQUALS the oracle's set", "cross-machine", "pages/s", "node-1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The live status page answered while the crawl ran, with both caches
	// and their miss-ratio curves.
	if js := fmt.Sprint(statusJSON); !strings.Contains(js, "node-0") || !strings.Contains(js, "per-peer splitter caches") || !strings.Contains(js, "curves") {
		t.Errorf("status.json lacks the node, the caches or their curves: %.300s", js)
	}
	// The cluster view came from the other node over its NodeStatus gRPC
	// service, and the busiest hosts are filled.
	if cl, _ := statusJSON["cluster"].([]any); len(cl) != 2 {
		t.Errorf("cluster view: %v", statusJSON["cluster"])
	} else if peer, _ := cl[1].(map[string]any); peer["node"] != "node-1" || peer["error"] != nil || peer["caches"] == nil {
		t.Errorf("node-1 in node-0's cluster view: %.300v", peer)
	}
	if node, _ := statusJSON["node"].(map[string]any); node == nil || node["busiestHosts"] == nil {
		t.Errorf("no busiest hosts: %.300v", statusJSON["node"])
	}
	// The report advises cache sizes from the live curves, in text and JSON.
	for _, n := range rep.PerNode {
		fa, pa := n.FrontAdvice, n.PeerAdvice
		if fa == nil || pa == nil || fa.CurrentPerWorker != 512 || fa.Workers != 8 || fa.KneePerWorker <= 0 ||
			pa.CurrentPerWorker != 4096 || pa.RequestsPerSec <= 0 || pa.KneeK <= 0 {
			t.Errorf("%s advice: front %+v peer %+v", n.ID, fa, pa)
		}
	}
	for _, want := range []string{"cache advice", "per-peer (cross-machine)", "knee", "per-worker, 512 entries each"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The traces hold every filtered link (full) and the URLs bound for the
	// peer (cross), readable by cachesim's reader.
	for i, n := range rep.PerNode {
		full, err := cachesim.ReadTraceFile(filepath.Join(dir, "data", n.ID, "full.trace"))
		if err != nil {
			t.Fatal(err)
		}
		cross, err := cachesim.ReadTraceFile(filepath.Join(dir, "data", n.ID, "cross.trace"))
		if err != nil {
			t.Fatal(err)
		}
		if uint64(len(cross)) != n.RemoteDiscovered || uint64(len(full)) != n.LinksLocal+n.LinksRemote {
			t.Errorf("node %d: full trace %d (want %d), cross %d (want %d)", i, len(full), n.LinksLocal+n.LinksRemote, len(cross), n.RemoteDiscovered)
		}
	}
	// Every fetch that got a response is archived as a response (or
	// revisit) record, besides the robots.txt responses (and their redirect
	// hops); every file validates with both independent readers.
	files, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc.gz"))
	recs, err := warctest.ValidateAll(files)
	if err != nil {
		t.Fatal(err)
	}
	responses := 0
	for _, r := range recs {
		if u, _ := url.Parse(r.URI); (r.Type == "response" || r.Type == "revisit") && u != nil && !strings.HasPrefix(u.Path, "/robots") {
			responses++
		}
	}
	var withResponse uint64
	for _, n := range rep.PerNode {
		withResponse += n.Fetches - n.FetchErrors
	}
	if uint64(responses) != withResponse || responses == 0 {
		t.Errorf("WARC holds %d response records in %d files, want %d", responses, len(files), withResponse)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Fetches != rep.Fetches || back.PerNode[0].FrontAdvice == nil {
		t.Fatalf("JSON report: %v, fetches %d want %d", err, back.Fetches, rep.Fetches)
	}
}

func TestDemoRejectsBadOptions(t *testing.T) {
	if _, err := Run(context.Background(), Options{Nodes: 99}, &bytes.Buffer{}); err == nil {
		t.Fatal("99 nodes accepted")
	}
	if _, err := Run(context.Background(), Options{WARCCompression: "0"}, &bytes.Buffer{}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("WARCCompression 0: %v", err)
	}
}
