"""The stylesheet and script inlined into every ``report.html`` page (no network at view time).

A small hand-written SVG chart kit instead of a bundled library: the report needs line charts
and lane (Gantt) charts with a shared time axis, zoom, hover and a group/partition filter,
which is a few hundred lines; a charting library would be a few hundred kilobytes.

The script reads the page's ``<script type="application/json" id="report-data">``:
``lo``/``hi`` (ms), ``lag`` (per-partition series of [ts, records, seconds]), ``commits``
(per-member series of [ts, commits per minute]), ``rebalances``, ``owners`` and ``status``
(intervals).

- zoom: drag across any chart to zoom every chart to that time range, the mouse wheel zooms
  around the pointer, a double click (or the reset button) shows the whole range again;
- hover: the nearest point (line charts) or the bar under the pointer (lane charts) is
  described in a tooltip;
- filter: the group and partition selects redraw every chart with the matching series only;
  each drawn series carries ``data-group``/``data-partition`` so tests can check it;
- tables with class ``sortable`` sort on a header click (numbers by their ``data-v``).
"""

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1240px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
h3{font-size:1.05em;margin:.2em 0}
.meta{color:#555;font-size:.9em}
.group{border:1px solid #ddd;border-left:6px solid #999;border-radius:4px;padding:.4em .8em;
 margin:.5em 0}
.group.s-OK{border-left-color:#4caf50}.group.s-WARN{border-left-color:#ffb300}
.group.s-ERR{border-left-color:#d32f2f}
.group ul{margin:.2em 0;padding-left:1.2em}.group li{margin:.15em 0;font-size:.92em}
.badge{font-size:.75em;padding:1px 6px;border-radius:3px;color:#fff;background:#999}
.badge.s-OK{background:#4caf50}.badge.s-WARN{background:#ffb300;color:#222}
.badge.s-ERR{background:#d32f2f}
.label{font-weight:600;display:inline-block;min-width:7.5em}
table{border-collapse:collapse;font-size:12px;margin:.4em 0}
td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;background:#f4f4f4}
table.sortable th.asc::after{content:" \\25B2"}table.sortable th.desc::after{content:" \\25BC"}
.controls{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #eee;
 z-index:2;font-size:.9em}
.controls select,.controls button{margin-right:1em}
.chart{position:relative}.chart svg{display:block;width:100%;user-select:none}
.chart .empty{color:#888;font-size:.9em;padding:1em}
.tip{position:fixed;pointer-events:none;background:rgba(30,30,30,.92);color:#fff;
 font-size:12px;padding:4px 7px;border-radius:3px;display:none;z-index:5;max-width:480px}
img{max-width:100%}
.legend{font-size:11px;margin:.2em 0 .6em 70px;display:flex;flex-wrap:wrap;gap:.2em 1em}
.legend .sw{display:inline-block;width:14px;height:4px;vertical-align:middle;margin-right:4px}
.legend .bar{height:10px}
"""

SCRIPT = r"""
(function(){
'use strict';
const D = JSON.parse(document.getElementById('report-data').textContent);
const NS = 'http://www.w3.org/2000/svg';
const PALETTE = ['#1f77b4','#ff7f0e','#2ca02c','#d62728','#9467bd','#8c564b','#e377c2',
                 '#7f7f7f','#bcbd22','#17becf'];
const state = {x0: D.lo, x1: D.hi, group: '', part: ''};
const STATUS_COLOUR = {OK: '#4caf50', WARN: '#ffb300', STOP: '#d32f2f', STALL: '#7b1fa2',
                       REWIND: '#1976d2', NOTFOUND: '#9e9e9e'};
const tip = document.createElement('div'); tip.className = 'tip'; document.body.appendChild(tip);
const M = {r: 12, t: 8, b: 26};

function el(name, attrs, parent){
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function pad(n, w){ return String(n).padStart(w || 2, '0'); }
function fmtTime(ms){
  const d = new Date(ms);
  return pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()) + ':' + pad(d.getUTCSeconds());
}
function fmtNum(v){
  if (Math.abs(v) >= 100 || Number.isInteger(v)) return Math.round(v).toLocaleString('en');
  return v.toFixed(Math.abs(v) >= 10 ? 1 : 2);
}
function niceTicks(lo, hi, n){
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(f => f * mag).find(s => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(v);
  return out;
}
function timeTicks(lo, hi, n){
  const steps = [1e3,2e3,5e3,1e4,15e3,3e4,6e4,12e4,3e5,6e5,9e5,18e5,36e5,72e5,216e5,432e5,864e5];
  const step = steps.find(s => (hi - lo) / s <= n) || 864e5;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(v);
  return out;
}
function keep(s){
  if (state.group && s.g !== state.group) return false;
  if (state.part && s.p !== undefined && s.t + '-' + s.p !== state.part) return false;
  return true;
}
function showTip(ev, html){
  tip.innerHTML = html; tip.style.display = 'block';
  tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 300) + 'px';
  tip.style.top = (ev.clientY + 14) + 'px';
}
function hideTip(){ tip.style.display = 'none'; }
function esc(s){ return String(s).replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c])); }

// Frame: the SVG, its scales and the shared zoom gestures; `L` is the left margin.
function frame(box, height, L){
  box.innerHTML = '';
  const W = Math.max(box.clientWidth, 400), H = height;
  const svg = el('svg', {viewBox: `0 0 ${W} ${H}`, height: H}, box);
  const pw = W - L - M.r, ph = H - M.t - M.b;
  const x = t => L + (t - state.x0) / Math.max(state.x1 - state.x0, 1) * pw;
  const tx = px => state.x0 + (px - L) / pw * (state.x1 - state.x0);
  el('defs', {}, svg).innerHTML =
    `<clipPath id="${box.id}-clip"><rect x="${L}" y="${M.t}" width="${pw}" height="${ph}"/></clipPath>`;
  const axis = el('g', {'font-size': 10, fill: '#444'}, svg);
  for (const t of timeTicks(state.x0, state.x1, Math.max(2, Math.floor(pw / 90)))){
    el('line', {x1: x(t), x2: x(t), y1: M.t, y2: M.t + ph, stroke: '#eee'}, axis);
    el('text', {x: x(t), y: H - 8, 'text-anchor': 'middle'}, axis).textContent = fmtTime(t);
  }
  el('text', {x: L + pw, y: H - 8, 'text-anchor': 'end', fill: '#888'}, axis).textContent = 'UTC';
  el('rect', {x: L, y: M.t, width: pw, height: ph, fill: 'none', stroke: '#bbb'}, svg);
  const plot = el('g', {'clip-path': `url(#${box.id}-clip)`}, svg);
  const brush = el('rect', {y: M.t, height: ph, fill: 'rgba(70,130,180,.2)', display: 'none'}, svg);
  let drag = null;
  svg.addEventListener('mousedown', ev => {
    const p = local(svg, ev); if (p.x < L) return;
    drag = p.x; brush.setAttribute('display', 'block');
    brush.setAttribute('x', p.x); brush.setAttribute('width', 0);
  });
  svg.addEventListener('mousemove', ev => {
    if (drag === null) return;
    const p = local(svg, ev);
    brush.setAttribute('x', Math.min(drag, p.x)); brush.setAttribute('width', Math.abs(p.x - drag));
  });
  svg.addEventListener('mouseup', ev => {
    if (drag === null) return;
    const p = local(svg, ev), a = Math.min(drag, p.x), b = Math.max(drag, p.x);
    drag = null; brush.setAttribute('display', 'none');
    if (b - a > 4) zoomTo(tx(a), tx(b));
  });
  svg.addEventListener('dblclick', () => zoomTo(D.lo, D.hi));
  svg.addEventListener('wheel', ev => {
    ev.preventDefault();
    const c = tx(local(svg, ev).x), f = ev.deltaY > 0 ? 1.25 : 0.8;
    zoomTo(c - (c - state.x0) * f, c + (state.x1 - c) * f);
  }, {passive: false});
  return {svg, plot, axis, x, tx, pw, ph, W, H, L};
}
function local(svg, ev){
  const r = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
  return {x: (ev.clientX - r.left) * vb.width / r.width, y: (ev.clientY - r.top) * vb.height / r.height};
}
function zoomTo(a, b){
  state.x0 = Math.max(D.lo, Math.min(a, b)); state.x1 = Math.min(D.hi, Math.max(a, b));
  if (state.x1 - state.x0 < 1000) state.x1 = state.x0 + 1000;
  drawAll();
}

// Legend under a chart: items [{colour, name, bar?}]; every chart has one.
function legend(box, items, note){
  const div = document.createElement('div'); div.className = 'legend';
  for (const it of items){
    const span = document.createElement('span'); span.className = 'legend-item';
    span.dataset.name = it.name;
    span.innerHTML = `<span class="sw${it.bar ? ' bar' : ''}" style="background:${it.colour}"></span>${esc(it.name)}`;
    div.appendChild(span);
  }
  if (note){ const n = document.createElement('span'); n.className = 'meta'; n.textContent = note; div.appendChild(n); }
  box.appendChild(div);
}

// Line chart: series [{g, t?, p?, m?, name, pts: [[ts, v...]]}], value column `col`.
function lineChart(box, series, col, unit){
  const shown = series.filter(keep);
  const f = frame(box, 240, 70);
  if (!shown.length){ el('text', {x: f.L + 10, y: 30, fill: '#888'}, f.svg).textContent = 'no data for this filter'; box.dataset.series = 0; return; }
  let ymax = 0;
  for (const s of shown) for (const q of s.pts) if (q[0] >= state.x0 && q[0] <= state.x1) ymax = Math.max(ymax, q[col]);
  ymax = ymax > 0 ? ymax * 1.05 : 1;
  const y = v => M.t + f.ph - v / ymax * f.ph;
  for (const v of niceTicks(0, ymax, 4)){
    el('line', {x1: f.L, x2: f.L + f.pw, y1: y(v), y2: y(v), stroke: '#eee'}, f.axis);
    el('text', {x: f.L - 4, y: y(v) + 3, 'text-anchor': 'end'}, f.axis).textContent = fmtNum(v);
  }
  el('text', {x: 12, y: M.t + f.ph / 2, transform: `rotate(-90 12 ${M.t + f.ph / 2})`,
              'text-anchor': 'middle', 'font-size': 10}, f.axis).textContent = unit;
  shown.forEach((s, i) => {
    const d = s.pts.map((q, j) => (j ? 'L' : 'M') + f.x(q[0]).toFixed(1) + ',' + y(q[col]).toFixed(1)).join('');
    const attrs = {d, fill: 'none', stroke: PALETTE[i % PALETTE.length], 'stroke-width': 1.5,
                   class: 'series', 'data-group': s.g, 'data-name': s.name};
    if (s.p !== undefined) attrs['data-partition'] = s.t + '-' + s.p;
    el('path', attrs, f.plot);
  });
  box.dataset.series = shown.length;
  legend(box, shown.map((s, i) => ({colour: PALETTE[i % PALETTE.length], name: s.name})));
  const dot = el('circle', {r: 4, fill: 'none', stroke: '#000', display: 'none'}, f.svg);
  f.svg.addEventListener('mousemove', ev => {
    const p = local(f.svg, ev); let best = null;
    for (const s of shown) for (const q of s.pts){
      const dx = f.x(q[0]) - p.x, dy = y(q[col]) - p.y, d = dx * dx + dy * dy;
      if (!best || d < best.d) best = {d, s, q};
    }
    if (!best || best.d > 900){ dot.setAttribute('display', 'none'); hideTip(); return; }
    dot.setAttribute('display', 'block'); dot.setAttribute('cx', f.x(best.q[0])); dot.setAttribute('cy', y(best.q[col]));
    showTip(ev, `<b>${esc(best.s.name)}</b><br>${fmtTime(best.q[0])} UTC<br>${fmtNum(best.q[col])} ${esc(unit)}`);
  });
  f.svg.addEventListener('mouseleave', () => { dot.setAttribute('display', 'none'); hideTip(); });
}

// Lane chart: lanes [{key, label}], bars [{lane, s, e, colour, text, g, t?, p?}].
function laneChart(box, lanes, bars, key, note){
  const shownBars = bars.filter(keep), used = new Set(shownBars.map(b => b.lane));
  const shownLanes = lanes.filter(l => used.has(l.key));
  // lane labels sit left of the plot: make room for the longest one
  const left = Math.min(300, 12 + 6 * Math.max(0, ...shownLanes.map(l => l.label.length)));
  const lh = 18, f = frame(box, Math.max(80, shownLanes.length * lh + M.t + M.b + 4), left);
  if (!shownLanes.length){ el('text', {x: f.L + 10, y: 30, fill: '#888'}, f.svg).textContent = 'no data for this filter'; box.dataset.series = 0; return; }
  const row = {};
  shownLanes.forEach((l, i) => {
    row[l.key] = M.t + 2 + i * lh;
    el('text', {x: f.L - 4, y: row[l.key] + lh / 2 + 3, 'text-anchor': 'end'}, f.axis).textContent = l.label;
  });
  for (const b of shownBars){
    const x0 = f.x(b.s), x1 = Math.max(f.x(b.e), x0 + 3);
    const attrs = {x: x0, y: row[b.lane] + 2, width: x1 - x0, height: lh - 5, fill: b.colour,
                   class: 'series', 'data-group': b.g, 'data-name': b.name || ''};
    if (b.p !== undefined) attrs['data-partition'] = b.t + '-' + b.p;
    const r = el('rect', attrs, f.plot);
    r.addEventListener('mousemove', ev => showTip(ev, b.text));
    r.addEventListener('mouseleave', hideTip);
    if (b.name && x1 - x0 > 6 * b.name.length + 8)
      el('text', {x: x0 + 4, y: row[b.lane] + lh - 6, fill: '#fff', 'font-size': 10,
                  'pointer-events': 'none'}, f.plot).textContent = b.name;
  }
  box.dataset.series = shownBars.length;
  const seen = new Map();
  for (const b of shownBars) if (!seen.has(b[key])) seen.set(b[key], b.colour);
  legend(box, [...seen].map(([name, colour]) => ({name, colour, bar: true})), note);
}

const memberColour = {};
function colourOf(m){
  if (!(m in memberColour)) memberColour[m] = PALETTE[Object.keys(memberColour).length % PALETTE.length];
  return memberColour[m];
}
function drawAll(){
  const q = id => document.getElementById(id);
  if (q('chart-lag-records')) lineChart(q('chart-lag-records'), D.lag, 1, 'records');
  if (q('chart-lag-seconds')) lineChart(q('chart-lag-seconds'), D.lag, 2, 'seconds');
  if (q('chart-commits')) lineChart(q('chart-commits'), D.commits, 1, 'commits/min');
  if (q('chart-rebalances')){
    const lanes = [...new Set(D.rebalances.map(r => r.g))].map(g => ({key: g, label: g}));
    laneChart(q('chart-rebalances'), lanes, D.rebalances.map(r => ({lane: r.g, g: r.g, s: r.s,
      e: r.e, colour: r.storm ? '#d32f2f' : '#ff9800', name: r.label,
      kind: r.storm ? 'rebalance in a storm' : 'rebalance (start to end)',
      text: `<b>${esc(r.g)}</b> ${esc(r.label)}<br>${esc(r.text)}`})), 'kind',
      'one lane per group; hover a bar for its cause');
  }
  if (q('chart-status')){
    const keys = [...new Set(D.status.map(o => o.g + '\u0000' + o.t + '-' + o.p))].sort();
    const lanes = keys.map(k => ({key: k, label: k.replace('\u0000', ' ')}));
    laneChart(q('chart-status'), lanes, D.status.map(o => ({lane: o.g + '\u0000' + o.t + '-' + o.p,
      g: o.g, t: o.t, p: o.p, s: o.s, e: o.e, colour: STATUS_COLOUR[o.st] || '#9e9e9e',
      name: o.st, text: `<b>${esc(o.t)}-${o.p}</b> ${esc(o.st)}${o.why ? ': ' + esc(o.why) : ''}` +
        `<br>${fmtTime(o.s)} to ${fmtTime(o.e)} UTC`})), 'name',
      'Burrow status at each evaluation (WARN also where the lag grew by more than a tenth of the appends); the last bar is the verdict at the end of the data');
  }
  if (q('chart-owners')){
    const keys = [...new Set(D.owners.map(o => o.g + '\u0000' + o.t + '-' + o.p))].sort();
    const lanes = keys.map(k => ({key: k, label: k.replace('\u0000', ' ')}));
    laneChart(q('chart-owners'), lanes, D.owners.map(o => ({lane: o.g + '\u0000' + o.t + '-' + o.p,
      g: o.g, t: o.t, p: o.p, s: o.s, e: o.e, colour: colourOf(o.m), name: o.m,
      text: `<b>${esc(o.m)}</b> owns ${esc(o.t)}-${o.p}<br>${fmtTime(o.s)} to ${fmtTime(o.e)} UTC`})),
      'name', 'colour = owning member; a gap = no owner');
  }
  const z = q('zoom-range');
  if (z) z.textContent = fmtTime(state.x0) + ' to ' + fmtTime(state.x1) + ' UTC';
}
function fillParts(){
  const sel = document.getElementById('f-part'); if (!sel) return;
  const parts = [...new Set(D.lag.concat(D.owners).filter(s => !state.group || s.g === state.group)
                             .map(s => s.t + '-' + s.p))].sort();
  sel.innerHTML = '<option value="">all partitions</option>' +
    parts.map(p => `<option value="${esc(p)}">${esc(p)}</option>`).join('');
  state.part = '';
}
window.groupcoordReport = {
  filter(group, part){
    state.group = group || ''; fillParts(); state.part = part || '';
    const g = document.getElementById('f-group'), p = document.getElementById('f-part');
    if (g) g.value = state.group; if (p) p.value = state.part;
    drawAll();
  },
  zoom: zoomTo,
};
const gsel = document.getElementById('f-group');
if (gsel) gsel.addEventListener('change', () => window.groupcoordReport.filter(gsel.value, ''));
const psel = document.getElementById('f-part');
if (psel) psel.addEventListener('change', () => { state.part = psel.value; drawAll(); });
const reset = document.getElementById('zoom-reset');
if (reset) reset.addEventListener('click', () => zoomTo(D.lo, D.hi));
fillParts();
drawAll();
window.addEventListener('resize', drawAll);

for (const table of document.querySelectorAll('table.sortable')){
  table.querySelectorAll('th').forEach((th, col) => th.addEventListener('click', () => {
    const asc = !th.classList.contains('asc');
    table.querySelectorAll('th').forEach(h => h.classList.remove('asc', 'desc'));
    th.classList.add(asc ? 'asc' : 'desc');
    const body = table.tBodies[0], rows = [...body.rows];
    const key = r => { const c = r.cells[col]; return c.dataset.v !== undefined ? Number(c.dataset.v) : c.textContent; };
    rows.sort((a, b) => { const x = key(a), y = key(b);
      const o = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
      return asc ? o : -o; });
    rows.forEach(r => body.appendChild(r));
  }));
}
})();
"""
