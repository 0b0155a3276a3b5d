package status

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/mrc"
)

func pageScript(t *testing.T) string {
	_, rest, ok := strings.Cut(pageHTML, "<script>")
	script, _, ok2 := strings.Cut(rest, "</script>")
	if !ok || !ok2 {
		t.Fatal("no inline script")
	}
	return script
}

// domMock is a minimal DOM for running the page's script under node: enough
// for getElementById, createElement(NS), appendChild/removeChild,
// attributes, textContent and fetch. After the first poll it prints what
// was drawn as JSON.
const domMock = `
"use strict";
class Node_ {
  constructor(tag){this.tag=tag;this.children=[];this.attrs={};this.style={};this._text="";this.className=""}
  setAttribute(k,v){this.attrs[k]=String(v)} getAttribute(k){return this.attrs[k]===undefined?null:this.attrs[k]}
  appendChild(c){this.children.push(c);return c} removeChild(c){this.children=this.children.filter(x=>x!==c);return c}
  get firstChild(){return this.children[0]||null}
  set textContent(v){this._text=String(v);this.children=[]} get textContent(){return this._text}
  all(){let out=[this];for(const c of this.children)out=out.concat(c.all());return out}
}
const ids={};
const body=new Node_("body");
globalThis.document={
  body:body,
  getElementById(id){if(!ids[id]){const n=new Node_(id.endsWith("Chart")||id==="outcomes"?"svg":"div");if(n.tag==="svg"){n.setAttribute("width",500);n.setAttribute("height",200)}ids[id]=n}return ids[id]},
  createElementNS(ns,tag){return new Node_(tag)}, createElement(tag){return new Node_(tag)},
};
globalThis.setInterval=()=>0;
const DATA=JSON.parse(process.env.STATUS_JSON);
globalThis.fetch=async()=>({ok:true,status:200,json:async()=>DATA});
`

const domReport = `
setTimeout(()=>{
  const count=(id,pred)=>document.getElementById(id).all().filter(pred).length;
  const paths=id=>count(id,n=>n.tag==="path"&&n.attrs.d&&n.attrs.d.length>2);
  const texts=id=>document.getElementById(id).all().map(n=>n.textContent).join("|");
  console.log(JSON.stringify({
    err: document.getElementById("err").textContent,
    pages: document.getElementById("pages").textContent,
    rate: document.getElementById("rate").textContent,
    ratePaths: paths("rateChart"), sizePaths: paths("sizeChart"),
    bars: count("outcomes",n=>n.tag==="rect"),
    mrcPaths: count("caches",n=>n.tag==="path"),
    cacheText: texts("caches"), peers: texts("peers"), delayed: texts("delayed"),
    cluster: texts("cluster"), latency: texts("latency"), polls: document.body.getAttribute("data-polls"),
    control: document.getElementById("control").textContent,
  }));
},50);
`

// TestScriptRendersUnderNode runs the page's script under node with a
// minimal DOM and a status.json document, and checks what it drew: the
// charts have paths, the numbers are those of the document. Skipped when
// node is not installed.
func TestScriptRendersUnderNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed; the script is not exercised")
	}
	curve := []mrc.Point{{K: 1, MissRatio: 0.9}, {K: 2, MissRatio: 0.5}, {K: 4, MissRatio: 0.2}, {K: 8, MissRatio: 0.19}}
	adv := mrc.MakeAdvice(curve, 2, 2, 1000)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	doc := Response{
		Node: Snapshot{Node: "node7", Pages: 123456, Frontier: 42, DUE: 99,
			Outcomes: map[string]uint64{"2xx": 90, "4xx": 7, "error": 3},
			Caches: []Cache{{Name: "due-front", Size: 2, HitRate: 0.61,
				Curves: map[string][]mrc.Point{"lru": curve, "clock": curve}, Advice: &adv}},
			Peers: []Peer{{ID: "node8", Up: true, SentURLs: 5, Spool: 17},
				{ID: "node9", Spool: 3, LastErrorKind: "tls", LastErrorAt: time.Now().Add(-time.Minute),
					LastError: "x509: certificate signed by unknown authority"}},
			Delayed: []Host{{Host: "slow.sim.test", DelayMS: 2500}},
			Latency: []Latency{{Name: "ttfb", Count: 4, MeanMS: 130, P50MS: 125, P90MS: 175, P99MS: 245}, {Name: "dns"}},
			Control: []string{"blocked: domain bad.test", "held: 0 URLs of paused hosts, 12 of blocked hosts"}},
		History: []Point{{Time: t0, Pages: 0, Frontier: 1}, {Time: t0.Add(time.Second), Pages: 50, PagesPerSec: 50, Frontier: 2, DUE: 3},
			{Time: t0.Add(2 * time.Second), Pages: 130, PagesPerSec: 80, Frontier: 4, DUE: 5}},
		Cluster: []Snapshot{{Node: "node7", Pages: 1}, {Node: "node8", Pages: 2}},
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "page.js")
	if err := os.WriteFile(p, []byte(domMock+pageScript(t)+domReport), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, p)
	cmd.Env = append(os.Environ(), "STATUS_JSON="+string(js))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Err, Pages, Rate, CacheText, Peers, Delayed, Cluster, Latency, Polls, Control string
		RatePaths, SizePaths, Bars, MrcPaths                                          int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("%+v", got)
	if got.Err != "" || got.Polls != "1" {
		t.Fatalf("script failed: %q (polls %q)", got.Err, got.Polls)
	}
	if got.Pages != "123.5k" || got.Rate != "80" {
		t.Errorf("kpis: pages %q rate %q", got.Pages, got.Rate)
	}
	if got.RatePaths != 1 || got.SizePaths != 2 || got.Bars != 3 || got.MrcPaths != 2 {
		t.Errorf("charts: %d rate paths, %d size paths, %d bars, %d curve paths", got.RatePaths, got.SizePaths, got.Bars, got.MrcPaths)
	}
	if want := "ttfb|4|130|125|175|245||dns|0|–"; !strings.Contains(got.Latency, want) {
		t.Errorf("latency table %q lacks %q", got.Latency, want)
	}
	if got.Control != "blocked: domain bad.test · held: 0 URLs of paused hosts, 12 of blocked hosts" {
		t.Errorf("operator rules: %q", got.Control)
	}
	for _, want := range []string{"due-front", "61.0%", "knee"} {
		if !strings.Contains(got.CacheText, want) {
			t.Errorf("cache card lacks %q: %s", want, got.CacheText)
		}
	}
	if !strings.Contains(got.Peers, "node8") || !strings.Contains(got.Peers, "17") || !strings.Contains(got.Delayed, "slow.sim.test") ||
		!strings.Contains(got.Cluster, "node8") || !strings.Contains(got.Peers, "|tls 6") || !strings.Contains(got.Peers, "s ago: x509: certificate signed by unknown authority") {
		t.Errorf("tables: peers %q delayed %q cluster %q", got.Peers, got.Delayed, got.Cluster)
	}
}
