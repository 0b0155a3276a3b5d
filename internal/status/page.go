package status

// pageHTML is the whole status page: inline CSS, inline JavaScript drawing
// SVG; it polls status.json (relative, so the handler may be mounted under
// any prefix) every two seconds.
const pageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}} status</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222;background:#fafafa}
h1{font-size:20px;margin:.2em 0} h2{font-size:16px;margin:1em 0 .3em}
.grid{display:flex;flex-wrap:wrap;gap:1.2em}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.6em .9em}
table{border-collapse:collapse} td,th{padding:2px 8px;text-align:right;border-bottom:1px solid #eee}
th{background:#f0f0f0} td:first-child,th:first-child{text-align:left}
.kpi{font-size:22px;font-weight:600} .muted{color:#777} .err{color:#b00}
svg text{font-size:11px;fill:#444}
</style></head><body>
<h1>{{TITLE}} <span id="node" class="muted"></span></h1>
<div id="err" class="err"></div>
<div class="grid">
 <div class="card"><div class="muted">pages</div><div class="kpi" id="pages">–</div></div>
 <div class="card"><div class="muted">pages/s</div><div class="kpi" id="rate">–</div></div>
 <div class="card"><div class="muted">frontier</div><div class="kpi" id="frontier">–</div></div>
 <div class="card"><div class="muted">DUE</div><div class="kpi" id="due">–</div></div>
 <div class="card"><div class="muted">uptime</div><div class="kpi" id="uptime">–</div></div>
</div>
<div class="grid">
 <div class="card"><h2>pages/s</h2><svg id="rateChart" width="520" height="200"></svg></div>
 <div class="card"><h2>frontier and DUE</h2><svg id="sizeChart" width="520" height="200"></svg></div>
 <div class="card"><h2>fetch outcomes</h2><svg id="outcomes" width="360" height="200"></svg></div>
 <div class="card" id="revisitBox" style="display:none"><h2>revisits</h2><svg id="revisit" width="360" height="200"></svg></div>
</div>
<h2>caches</h2><div id="caches" class="grid"></div>
<div class="grid">
 <div class="card"><h2>peers</h2><table id="peers"></table></div>
 <div class="card"><h2>busiest hosts</h2><table id="busiest"></table></div>
 <div class="card"><h2>most delayed hosts</h2><table id="delayed"></table></div>
 <div class="card"><h2>latency</h2><table id="latency"></table></div>
</div>
<div class="card"><h2>operator rules</h2><div id="control" class="muted"></div></div>
<div id="clusterBox" class="card" style="display:none"><h2>cluster</h2><table id="cluster"></table></div>
<script>
"use strict";
const NS="http://www.w3.org/2000/svg";
const COLORS=["#1f77b4","#d62728","#2ca02c","#ff7f0e","#9467bd","#8c564b"];
function el(tag,attrs,text){const e=document.createElementNS(NS,tag);for(const k in attrs)e.setAttribute(k,attrs[k]);if(text!==undefined)e.textContent=text;return e}
function fmt(x){if(x===undefined||x===null)return "–";if(Math.abs(x)>=1e9)return (x/1e9).toFixed(2)+"G";if(Math.abs(x)>=1e6)return (x/1e6).toFixed(2)+"M";if(Math.abs(x)>=1e4)return (x/1e3).toFixed(1)+"k";if(Math.abs(x)>=100)return Math.round(x).toString();return (Math.round(x*100)/100).toString()}
function saves(x){return x<0?"costs "+fmt(-x)+" more URLs/s":"saves "+fmt(x)+" URLs/s"}
// lineChart draws series [{name,pts:[[x,y]...]}] into svg; opts.logx: x is log2.
function lineChart(svg,series,opts){
 while(svg.firstChild)svg.removeChild(svg.firstChild);
 const W=+svg.getAttribute("width"),H=+svg.getAttribute("height"),L=48,R=8,T=8,B=22;
 let xs=[],ys=[];series.forEach(s=>s.pts.forEach(p=>{xs.push(p[0]);ys.push(p[1])}));
 if(xs.length===0){svg.appendChild(el("text",{x:W/2-20,y:H/2},"no data"));return}
 let x0=Math.min(...xs),x1=Math.max(...xs),y0=opts.y0!==undefined?opts.y0:Math.min(0,...ys),y1=opts.y1!==undefined?opts.y1:Math.max(...ys);
 if(x1===x0)x1=x0+1; if(y1===y0)y1=y0+1;
 const X=x=>L+(x-x0)/(x1-x0)*(W-L-R),Y=y=>H-B-(y-y0)/(y1-y0)*(H-T-B);
 svg.appendChild(el("line",{x1:L,y1:H-B,x2:W-R,y2:H-B,stroke:"#999"}));
 svg.appendChild(el("line",{x1:L,y1:T,x2:L,y2:H-B,stroke:"#999"}));
 for(let i=0;i<=4;i++){const y=y0+(y1-y0)*i/4;svg.appendChild(el("text",{x:2,y:Y(y)+4},fmt(y)));svg.appendChild(el("line",{x1:L,y1:Y(y),x2:W-R,y2:Y(y),stroke:"#eee"}))}
 const nt=opts.logx?Math.min(6,Math.round(x1-x0)):4;
 for(let i=0;i<=nt;i++){const x=x0+(x1-x0)*i/nt;svg.appendChild(el("text",{x:X(x)-(i===nt?24:10),y:H-6},opts.logx?"2^"+Math.round(x):opts.xfmt?opts.xfmt(x):fmt(x)))}
 series.forEach((s,i)=>{
  const d=s.pts.map((p,j)=>(j?"L":"M")+X(p[0]).toFixed(1)+","+Y(p[1]).toFixed(1)).join("");
  svg.appendChild(el("path",{d:d,fill:"none",stroke:COLORS[i%COLORS.length],"stroke-width":1.6,"class":"series","data-name":s.name}));
  if(series.length>1)svg.appendChild(el("text",{x:W-R-70,y:T+12+12*i,fill:COLORS[i%COLORS.length],style:"fill:"+COLORS[i%COLORS.length]},s.name));
 });
 if(opts.mark!==undefined){svg.appendChild(el("line",{x1:X(opts.mark),y1:T,x2:X(opts.mark),y2:H-B,stroke:"#888","stroke-dasharray":"3,3"}))}
}
function barChart(svg,obj){
 while(svg.firstChild)svg.removeChild(svg.firstChild);
 const keys=Object.keys(obj||{}).sort(),W=+svg.getAttribute("width");
 if(keys.length===0){svg.appendChild(el("text",{x:10,y:20},"no fetches yet"));return}
 const mx=Math.max(...keys.map(k=>obj[k]),1);
 keys.forEach((k,i)=>{const y=8+i*22,w=(W-170)*obj[k]/mx;
  svg.appendChild(el("text",{x:2,y:y+13},k));
  svg.appendChild(el("rect",{x:90,y:y,width:Math.max(w,1),height:16,fill:COLORS[i%COLORS.length],"class":"bar"}));
  svg.appendChild(el("text",{x:95+w,y:y+13},fmt(obj[k])))});
 svg.setAttribute("height",Math.max(40,keys.length*22+10));
}
function ago(t){const s=(Date.now()-Date.parse(t))/1000;return isFinite(s)?Math.max(0,Math.round(s))+"s ago":""}
function table(t,head,rows){
 t.textContent="";const tr=document.createElement("tr");head.forEach(h=>{const th=document.createElement("th");th.textContent=h;tr.appendChild(th)});t.appendChild(tr);
 rows.forEach(r=>{const tr=document.createElement("tr");r.forEach(c=>{const td=document.createElement("td");td.textContent=(typeof c==="number")?fmt(c):c;tr.appendChild(td)});t.appendChild(tr)});
}
function caches(box,cs){
 box.textContent="";
 (cs||[]).forEach(c=>{
  const card=document.createElement("div");card.className="card cache";
  const h=document.createElement("h2");h.textContent=c.name+" — size "+fmt(c.size)+"/"+(c.unit||"worker")+", hit rate "+(100*c.hitRate).toFixed(1)+"%";card.appendChild(h);
  const svg=el("svg",{width:440,height:200,"class":"mrc"});card.appendChild(svg);
  const series=Object.keys(c.curves||{}).sort().map(a=>({name:a,pts:c.curves[a].map(p=>[Math.log2(p.k),p.missRatio])}));
  lineChart(svg,series,{logx:true,y0:0,y1:1,mark:c.size>0?Math.log2(c.size*(c.advice?c.advice.workers:1)):undefined});
  if(c.advice){const p=document.createElement("div");const a=c.advice;
   p.textContent="now miss "+(100*a.currentMiss).toFixed(1)+"% ("+fmt(a.sentPerSec)+" URLs/s sent) · knee "+fmt(a.kneePerWorker)+"/"+(c.unit||"worker")+" "+saves(a.kneeSavedPerSec)+" · "+(a.reached20?("20% miss at "+fmt(a.k20PerWorker)+"/"+(c.unit||"worker")+" "+saves(a.k20SavedPerSec)):"20% miss not reached");
   card.appendChild(p)}
  if(c.note){const p=document.createElement("div");p.className="muted";p.textContent=c.note;card.appendChild(p)}
  box.appendChild(card)});
}
let wantCluster=true;
async function poll(){
 try{
  const r=await fetch("status.json"+(wantCluster?"?cluster=1":""),{cache:"no-store"});
  if(!r.ok)throw new Error("HTTP "+r.status);
  const d=await r.json(),n=d.node,h=d.history||[];
  document.getElementById("err").textContent="";
  document.getElementById("node").textContent=n.node;
  document.getElementById("pages").textContent=fmt(n.pages);
  document.getElementById("rate").textContent=h.length?fmt(h[h.length-1].pagesPerSec):"–";
  document.getElementById("frontier").textContent=fmt(n.frontier);
  document.getElementById("due").textContent=fmt(n.due);
  document.getElementById("uptime").textContent=fmt(n.uptimeSec)+"s";
  const t0=h.length?Date.parse(h[0].time):0;
  lineChart(document.getElementById("rateChart"),[{name:"pages/s",pts:h.map(p=>[(Date.parse(p.time)-t0)/1000,p.pagesPerSec])}],{xfmt:x=>Math.round(x)+"s"});
  lineChart(document.getElementById("sizeChart"),[{name:"frontier",pts:h.map(p=>[(Date.parse(p.time)-t0)/1000,p.frontier])},{name:"DUE",pts:h.map(p=>[(Date.parse(p.time)-t0)/1000,p.due])}],{xfmt:x=>Math.round(x)+"s"});
  document.getElementById("control").textContent=(n.control||[]).join(" · ")||"none";
  barChart(document.getElementById("outcomes"),n.outcomes);
  if(n.revisit){document.getElementById("revisitBox").style.display="";barChart(document.getElementById("revisit"),n.revisit)}
  caches(document.getElementById("caches"),n.caches);
  table(document.getElementById("peers"),["peer","up","sent URLs","recv URLs","sent bytes","spool","last error"],(n.peers||[]).map(p=>[p.id,p.up?"yes":"NO",p.sentUrls,p.recvUrls,p.sentBytes,p.spool,p.lastError?(p.lastErrorKind+" "+ago(p.lastErrorAt)+": "+p.lastError):""]));
  table(document.getElementById("busiest"),["host","fetches","bytes","mean fetch ms"],(n.busiestHosts||[]).map(h=>[h.host,h.fetches,h.bytes||0,h.fetchMs||0]));
  table(document.getElementById("delayed"),["host","fetches","next fetch in ms","failures"],(n.delayedHosts||[]).map(h=>[h.host,h.fetches,h.delayMs,h.failures||0]));
  table(document.getElementById("latency"),["","count","mean ms","p50 ms","p90 ms","p99 ms"],(n.latency||[]).map(l=>l.count?[l.name,l.count,l.meanMs,l.p50Ms,l.p90Ms,l.p99Ms]:[l.name,0,"–","–","–","–"]));
  if(d.cluster&&d.cluster.length){document.getElementById("clusterBox").style.display="";
   table(document.getElementById("cluster"),["node","state","pages","pages/s (mean)","frontier","DUE","front-cache hit","peers up"],d.cluster.map(s=>s.error?[s.node,s.error,"","","","","",""]:[s.node,s.fenced||"ok",s.pages,s.uptimeSec>0?s.pages/s.uptimeSec:0,s.frontier,s.due,(s.caches&&s.caches.length)?(100*s.caches[0].hitRate).toFixed(1)+"%":"–",(s.peers||[]).filter(p=>p.up).length+"/"+(s.peers||[]).length]))}
  else wantCluster=false;
  document.body.setAttribute("data-polls",(+(document.body.getAttribute("data-polls")||0)+1).toString());
 }catch(e){document.getElementById("err").textContent="status.json: "+e.message}
}
poll();setInterval(poll,2000);
</script></body></html>
`
