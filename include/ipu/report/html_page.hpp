#pragma once
/// \file
/// The page `ipu::html_report` writes (`html_report.hpp`): its HTML, style and script, around
/// the title and the data the report writes between them. The script draws the page from the
/// data (the `ipu-data` element): nothing is fetched, every chart is inline SVG. A first
/// script collects every error (an exception, a rejected promise, `console.error`) into the
/// `ipu-errors` element at the top of the page, and the body's `data-status` becomes `ok` once
/// everything is drawn, with the time it took in `data-render-ms`.
///
/// The parts are character arrays, not `std::string_view`s: a view of a literal has its length
/// counted one character at a time by the constant evaluator, which for the script's 40 KB took
/// 9% of the instructions g++ 12 and clang 16 ran to compile `<ipu/ipu.hpp>`.

namespace ipu::detail::html_page {

/// Up to the page's `<title>` text.
inline constexpr char head[] = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="ipu">
<title>)html";

/// From the end of the title to the element holding the data: the style, the error
/// collector, the page's skeleton.
inline constexpr char style[] = R"html( - ipu report</title>
<script>
window.ipuErrors = [];
window.ipuFail = function (message) {
  window.ipuErrors.push(String(message));
  var box = document.getElementById('ipu-errors');
  if (box) { box.hidden = false; box.textContent = 'The report could not be drawn:\n' + window.ipuErrors.join('\n'); }
  if (document.body) document.body.dataset.status = 'error';
};
window.addEventListener('error', function (e) { window.ipuFail(e.message + ' (line ' + e.lineno + ')'); });
window.addEventListener('unhandledrejection', function (e) { window.ipuFail('unhandled rejection: ' + e.reason); });
(function () {
  var original = console.error;
  console.error = function () {
    window.ipuFail(Array.prototype.join.call(arguments, ' '));
    original.apply(console, arguments);
  };
})();
</script>
<style>
:root { --fg: #1d2430; --muted: #5b6678; --line: #d9dee7; --bg: #f6f7f9; --card: #fff; --accent: #3056d3; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: var(--bg); }
header { background: #1d2430; color: #fff; padding: 14px 24px 10px; }
header h1 { margin: 0; font-size: 20px; font-weight: 600; }
header .sub { color: #b8c1d1; font-size: 13px; }
nav { position: sticky; top: 0; z-index: 2; background: #fff; border-bottom: 1px solid var(--line); padding: 0 24px; }
nav a { display: inline-block; padding: 9px 12px; color: var(--fg); text-decoration: none; border-bottom: 2px solid transparent; }
nav a:hover { border-bottom-color: var(--accent); }
main { padding: 8px 24px 40px; max-width: 1500px; }
section { margin-top: 18px; }
h2 { font-size: 17px; margin: 20px 0 8px; }
h3 { font-size: 14px; margin: 14px 0 6px; color: var(--muted); font-weight: 600; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 10px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
.card .value { font-size: 18px; font-weight: 600; margin-top: 2px; }
.card .note { color: var(--muted); font-size: 12px; }
.panel { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 12px; margin-top: 10px; }
.row { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; }
.grow { flex: 1 1 auto; }
#ipu-errors { background: #fde8e8; color: #8a1010; border: 1px solid #e7a3a3; padding: 10px 24px; margin: 0; white-space: pre-wrap; }
.tilemap { display: grid; gap: 1px; background: var(--line); border: 1px solid var(--line); width: 100%; max-width: 1100px; }
.tile { aspect-ratio: 1; min-width: 4px; }
.tile.selected { outline: 2px solid #000; outline-offset: -1px; }
.legend { display: flex; align-items: center; gap: 6px; font-size: 12px; color: var(--muted); }
.legend .scale { width: 180px; height: 10px; border-radius: 2px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }
.keys span { margin-right: 12px; font-size: 12px; white-space: nowrap; }
input[type=range] { width: 100%; max-width: 1100px; }
button { font: inherit; padding: 3px 10px; border: 1px solid var(--line); border-radius: 4px; background: #fff; cursor: pointer; }
button:hover { border-color: var(--accent); }
button.on { background: var(--accent); color: #fff; border-color: var(--accent); }
select, input[type=search] { font: inherit; padding: 3px 6px; border: 1px solid var(--line); border-radius: 4px; }
table { border-collapse: collapse; font-size: 13px; background: #fff; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th { background: #eef1f6; }
.sortable th { position: sticky; top: 0; cursor: pointer; user-select: none; z-index: 1; }
.tall { max-height: 75vh; overflow: auto; }
th.text, td.text { text-align: left; }
th[data-order=asc]::after { content: " \25b2"; }
th[data-order=desc]::after { content: " \25bc"; }
tr:hover td { background: #f3f6fc; }
.scroll { overflow-x: auto; }
.muted { color: var(--muted); }
.bad { color: #b42318; font-weight: 600; }
.good { color: #137333; font-weight: 600; }
svg { display: block; width: 100%; height: auto; font: 11px system-ui, sans-serif; }
svg .axis { stroke: #9aa4b5; stroke-width: 1; }
svg .grid { stroke: #e6e9ef; stroke-width: 1; }
svg text { fill: var(--muted); }
svg .cursor { stroke: #000; stroke-width: 1; stroke-dasharray: 3 2; }
.bar { height: 16px; display: flex; border-radius: 3px; overflow: hidden; background: #eee; max-width: 900px; }
.bar div { height: 100%; }
</style>
</head>
<body data-status="drawing">
<header><h1 id="title"></h1><div class="sub" id="subtitle"></div></header>
<pre id="ipu-errors" hidden></pre>
<nav><a href="#summary">Summary</a><a href="#memory">Memory</a><a href="#execution">Execution</a><a href="#layers">Layers</a><a href="#compare">Compare</a></nav>
<main>
<section id="summary"><h2>Summary</h2><div class="cards" id="summary-cards"></div><div id="summary-ipus"></div></section>
<section id="memory"><h2>Memory</h2><div id="memory-body"></div></section>
<section id="execution"><h2>Execution</h2><div id="execution-body"></div></section>
<section id="layers"><h2>Layers</h2><div id="layers-body"></div></section>
<section id="compare"><h2>Compare</h2><div id="compare-body"></div></section>
</main>
)html";

/// The script that draws the page from the data.
inline constexpr char script[] = R"html(<script>
'use strict';
(function () {
const started = performance.now();
const data = JSON.parse(document.getElementById('ipu-data').textContent);
const SVG = 'http://www.w3.org/2000/svg';
const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
// The cycle model's parts of a step (plan/cycles.hpp), and the phases of a training step.
const KINDS = [['compute', 'compute_cycles', '#4e79a7'], ['exchange', 'exchange_cycles', '#f28e2b'],
               ['sync', 'sync_cycles', '#bab0ac'], ['IPU-Link', 'link_cycles', '#e15759'], ['host link', 'host_cycles', '#b07aa1']];
const PHASES = [['forward', '#1f4e9c'], ['recompute', '#17becf'], ['backward', '#d9480f'], ['update', '#2b8a3e']];
const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}
function svgEl(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}
const grouped = n => Math.round(n).toLocaleString('en-US');
const percent = (a, b) => b > 0 ? (100 * a / b).toFixed(1) + '%' : '-';
const fixed = (x, d) => Number.isFinite(x) ? x.toFixed(d) : '-';
const mib = b => (b / 1048576).toFixed(1) + ' MiB';
const sum = a => a.reduce((s, v) => s + v, 0);
function compact(n) {
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(a >= 1e10 ? 0 : 1) + 'G';
  if (a >= 1e6) return (n / 1e6).toFixed(a >= 1e7 ? 0 : 1) + 'M';
  if (a >= 1e3) return (n / 1e3).toFixed(a >= 1e4 ? 0 : 1) + 'k';
  return String(Math.round(n));
}
function viridis(f) {
  const x = Math.min(1, Math.max(0, f)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x)), t = x - i;
  return 'rgb(' + VIRIDIS[i].map((v, k) => Math.round(v + t * (VIRIDIS[i + 1][k] - v))).join(',') + ')';
}
const tileColour = (bytes, capacity) => bytes > capacity ? '#d62728' : viridis(bytes / capacity);
function card(label, value, note, id) {
  const v = el('div', {class: 'value', text: value});
  if (id) v.id = id;
  return el('div', {class: 'card'}, el('div', {class: 'label', text: label}), v, note ? el('div', {class: 'note', text: note}) : null);
}
function keys(entries) {
  return el('div', {class: 'keys'}, ...entries.map(([name, colour]) =>
    el('span', {}, el('span', {class: 'swatch', style: 'background:' + colour}), name)));
}
// Each op its own colour, in the order the ops first appear.
const opColours = new Map();
function opColour(op) {
  if (!opColours.has(op)) opColours.set(op, PALETTE[opColours.size % PALETTE.length]);
  return opColours.get(op);
}
const cyclesOf = s => sum(KINDS.map(k => s[k[1]] || 0));

// One run, inference or training, in one shape: the memory of each IPU's steps (`reports`),
// the profile's steps (`steps`) and their groups (per IPU, or per phase), and per node its
// cycles, host time and fullest tile.
function prepare(run) {
  const training = run.kind === 'training';
  const m = run.memory, p = run.profile, unit = run.tile_steps.unit;
  // Every tile's bytes at every step, `cells[ipu][step * tiles + tile]`, from the distinct rows.
  const T = m.tiles;
  const cells = run.tile_steps.ipus.map(c => {
    const bin = atob(c.rows), out = new Uint32Array(c.steps.length * T);
    c.steps.forEach((row, k) => {
      for (let t = 0, at = 2 * row * T; t < T; ++t, at += 2) out[k * T + t] = (bin.charCodeAt(at) | bin.charCodeAt(at + 1) << 8) * unit;
    });
    return out;
  });
  const path = node => m.layers[node].path;
  let reports;
  if (training) {
    reports = [{ipu: 0, capacity: m.capacity, peak: m.peak, peakTile: m.peak_tile, peakK: m.peak_step, atPeak: m.at_peak,
      totals: m.totals, histogram: m.histogram, tiles: m.tile_peaks.map(tp => ({k: tp[0], bytes: tp.slice(1)})),
      steps: m.steps.map(s => ({label: s.phase + ' ' + path(s.node), node: s.node, tile: s.tile, bytes: s.bytes, ipuBytes: s.ipu_bytes})),
      overBound: []}];
  } else {
    reports = m.ipu_reports.map(r => {
      const kOf = new Map(r.steps.map((s, k) => [s.node, k]));
      return {ipu: r.ipu, capacity: r.capacity, peak: r.peak, peakTile: r.peak_tile, peakK: r.peak_step >= 0 ? kOf.get(r.peak_step) : -1,
        atPeak: r.at_peak, totals: r.totals, histogram: r.histogram,
        tiles: r.tiles.map(tp => ({k: tp[0] >= 0 ? kOf.get(tp[0]) : -1, bytes: tp.slice(1)})),
        steps: r.steps.map(s => ({label: path(s.node), node: s.node, tile: s.tile, bytes: s.bytes, ipuBytes: s.ipu_bytes})),
        overBound: r.over_bound.map(w => w.node)};
    });
  }
  const peakIpu = reports.reduce((best, r, i) => r.peak > reports[best].peak ? i : best, 0);
  // The profile's steps, each with its cycles by kind, its host seconds and its group.
  const steps = p.steps.map(s => Object.assign({}, s, {label: training ? s.phase + ' ' + s.path : s.path,
    group: training ? s.phase : (s.ipu < 0 ? 'host' : 'IPU ' + s.ipu), op: m.layers[s.node].op}));
  const groupNames = training ? PHASES.map(ph => ph[0]) : p.ipus.map((q, i) => 'IPU ' + i).concat(p.host ? ['host'] : []);
  const groups = groupNames.map(name => {
    const g = {name, steps: 0, host_seconds: 0};
    KINDS.forEach(k => { g[k[1]] = 0; });
    steps.filter(s => s.group === name).forEach(s => { g.steps += 1; g.host_seconds += s.host_seconds; KINDS.forEach(k => { g[k[1]] += s[k[1]]; }); });
    return g;
  }).filter(g => g.steps > 0);
  // Per node: cycles and host time (by phase in training), and its fullest tile over its steps.
  const nodes = m.layers.map(() => ({cycles: 0, host: 0, tileBytes: 0, tile: -1, byPhase: PHASES.map(() => 0)}));
  steps.forEach(s => {
    const n = nodes[s.node];
    n.cycles += cyclesOf(s);
    n.host += s.host_seconds;
    if (training) n.byPhase[PHASES.findIndex(ph => ph[0] === s.phase)] += cyclesOf(s);
  });
  reports.forEach(r => r.steps.forEach(s => {
    const n = nodes[s.node], b = sum(s.bytes);
    if (b > n.tileBytes) { n.tileBytes = b; n.tile = s.tile; }
  }));
  const measured = training ? p.steps_measured > 0 : p.batches_measured > 0;
  const rate = training ? {
    unit: 'samples/s', cyclesLabel: 'cycles per step', cycles: p.cycles_per_step, simulated: p.simulated_samples_per_second,
    pipelined: null, measured: measured ? p.measured_samples_per_second : null,
    hostMs: measured ? 1e3 * sum(steps.map(s => s.host_seconds)) : null,
    note: measured ? 'the mean of ' + p.steps_measured + ' micro-batches on the host' : 'no step run (the plan alone)'
  } : {
    unit: 'images/s', cyclesLabel: 'cycles per batch', cycles: p.cycles_per_batch, simulated: p.simulated_images_per_second,
    pipelined: m.ipus > 1 ? p.pipelined_images_per_second : null, measured: measured ? p.host_images_per_second : null,
    hostMs: measured ? 1e3 * p.host_seconds_per_batch : null,
    note: measured ? p.batches_measured + ' batches measured on the host, ' + p.mode + ' mode' : 'no batch run (the plan alone)'
  };
  return {run, training, m, p, unit, cells, reports, peakIpu, steps, groups, nodes, rate,
          clock: p.clock_hz, params: sum(m.layers.map(l => l.params)), macs: sum(m.layers.map(l => l.macs))};
}
const runs = data.runs.map(prepare);
const R = runs[0];

// The summary.
function drawSummary() {
  const {m, p, rate} = R;
  document.getElementById('title').textContent = R.run.name;
  const ipuCount = R.training ? 1 : m.ipus;
  document.getElementById('subtitle').textContent = m.target + (R.training ? ', training' : '') + ', ' + ipuCount +
    (ipuCount === 1 ? ' IPU' : ' IPUs') + ' of ' + grouped(m.tiles) + ' tiles x ' + grouped(m.bytes_per_tile) + ' bytes; ' +
    m.layers.length + ' nodes; ' + data.generator;
  const top = R.reports[R.peakIpu];
  const where = top.peakK >= 0 ? top.steps[top.peakK].label : '-';
  const cards = document.getElementById('summary-cards');
  cards.append(
    card('Fits', m.fits ? 'yes' : 'no', m.fits ? 'every tile within its memory' : 'some tile is over its memory', 'summary-fits'),
    card('Peak memory', grouped(top.peak) + ' B', percent(top.peak, top.capacity) + ' of ' + grouped(top.capacity) +
         ' on IPU ' + top.ipu + ', tile ' + top.peakTile + ', during ' + where, 'summary-peak'),
    card('Model', m.layers.length + ' nodes', grouped(R.params) + ' parameters, ' + compact(R.macs) + ' MACs per ' + (R.training ? 'micro-batch' : 'batch')));
  if (R.training) {
    const w = p.window;
    cards.append(card('Training', 'micro-batch ' + p.batch_size, m.training + '; ' + w.micro_batches + ' micro-batches a step, ' +
      w.schedule + ' over ' + w.stages + (w.stages === 1 ? ' stage' : ' stages') +
      (m.state_shards > 1 ? '; optimiser state over ' + m.state_shards + ' replicas' : '')));
  } else {
    cards.append(card('Batch', String(p.batch_size), rate.note));
  }
  cards.append(
    card('Simulated', fixed(rate.simulated, 1) + ' ' + rate.unit, grouped(rate.cycles) + ' ' + rate.cyclesLabel + ' at ' +
         (R.clock / 1e9).toFixed(3) + ' GHz' + (rate.pipelined !== null ? '; ' + fixed(rate.pipelined, 1) + ' images/s pipelined' : ''), 'summary-simulated'),
    card('Measured (host)', rate.measured !== null ? fixed(rate.measured, 1) + ' ' + rate.unit : '-',
         rate.measured !== null ? fixed(rate.hostMs, 2) + ' ms per ' + (R.training ? 'micro-batch\u2019s passes and an update' : 'batch') + '; ' + rate.note : rate.note));
  if (R.reports.length > 1) {
    const t = el('table', {}, el('tr', {}, ...['IPU', 'nodes', 'peak bytes', 'of capacity', 'peak tile', 'cycles', 'host ms'].map(h => el('th', {text: h}))));
    R.reports.forEach((r, i) => t.append(el('tr', {},
      el('td', {text: String(i)}), el('td', {text: String(r.steps.length)}), el('td', {text: grouped(r.peak)}),
      el('td', {text: percent(r.peak, r.capacity)}), el('td', {text: String(r.peakTile)}),
      el('td', {text: grouped(cyclesOf(p.ipus[i]))}), el('td', {text: fixed(p.ipus[i].host_seconds * 1e3, 2)}))));
    document.getElementById('summary-ipus').append(el('div', {class: 'panel scroll'}, t));
  }
}

// A stacked chart of series over steps: `series[c][k]` for category c at step k, drawn as areas
// or bars; `line` an optional line on top (e.g. a capacity); `onPick(k)` when a step is clicked.
function stackChart(series, colours, opts) {
  const W = 1000, H = opts.height || 220, L = 64, B = 22, T = 8;
  const n = series.length ? series[0].length : 0;
  const totals = new Array(n).fill(0);
  series.forEach(s => s.forEach((v, k) => { totals[k] += v; }));
  const top = Math.max(1, ...totals, opts.line || 0) * 1.05;
  const x = k => L + (W - L - 8) * (opts.bars ? k / n : (n > 1 ? k / (n - 1) : 0.5));
  const y = v => T + (H - T - B) * (1 - v / top);
  const g = svgEl('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': opts.label});
  for (let i = 0; i <= 4; ++i) {
    const v = top * i / 4;
    g.append(svgEl('line', {class: 'grid', x1: L, x2: W - 8, y1: y(v), y2: y(v)}),
             svgEl('text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end'}, opts.format(v)));
  }
  const base = new Array(n).fill(0);
  series.forEach((s, c) => {
    if (opts.bars) {
      const w = Math.max(0.5, (W - L - 8) / n - (n < 200 ? 1 : 0));
      s.forEach((v, k) => {
        if (v > 0) g.append(svgEl('rect', {x: x(k), y: y(base[k] + v), width: w, height: Math.max(0, y(base[k]) - y(base[k] + v)), fill: colours[c]}));
        base[k] += v;
      });
    } else {
      let d = '';
      for (let k = 0; k < n; ++k) d += (k ? 'L' : 'M') + x(k).toFixed(1) + ',' + y(base[k] + s[k]).toFixed(1);
      for (let k = n - 1; k >= 0; --k) d += 'L' + x(k).toFixed(1) + ',' + y(base[k]).toFixed(1);
      g.append(svgEl('path', {d: d + 'Z', fill: colours[c], 'fill-opacity': 0.85}));
      s.forEach((v, k) => { base[k] += v; });
    }
  });
  if (opts.line) g.append(svgEl('line', {x1: L, x2: W - 8, y1: y(opts.line), y2: y(opts.line), stroke: '#d62728', 'stroke-dasharray': '6 3'}),
                         svgEl('text', {x: W - 10, y: y(opts.line) - 4, 'text-anchor': 'end'}, opts.lineLabel));
  if (opts.strip) {  // a band under the axis, coloured per step (e.g. by training phase)
    const w = (W - L - 8) / n;
    opts.strip.forEach((colour, k) => g.append(svgEl('rect', {x: L + w * k, y: H - B + 2, width: w + 0.3, height: 5, fill: colour})));
  }
  g.append(svgEl('line', {class: 'axis', x1: L, x2: W - 8, y1: H - B, y2: H - B}),
           svgEl('text', {x: L, y: H - 4}, 'first step'), svgEl('text', {x: W - 8, y: H - 4, 'text-anchor': 'end'}, 'last step'));
  const cursor = svgEl('line', {class: 'cursor', y1: T, y2: H - B, visibility: 'hidden'});
  g.append(cursor);
  const stepAt = evt => {
    const box = g.getBoundingClientRect();
    const f = ((evt.clientX - box.left) * W / box.width - L) / (W - L - 8);
    return Math.max(0, Math.min(n - 1, opts.bars ? Math.floor(f * n) : Math.round(f * (n - 1))));
  };
  if (opts.onPick) {
    g.style.cursor = 'pointer';
    g.addEventListener('click', evt => opts.onPick(stepAt(evt)));
  }
  if (opts.tip) {
    const tip = svgEl('title');
    g.append(tip);
    g.addEventListener('mousemove', evt => { tip.textContent = opts.tip(stepAt(evt)); });
  }
  g.setCursor = k => {
    const cx = opts.bars ? x(k) + (W - L - 8) / n / 2 : x(k);
    cursor.setAttribute('x1', cx); cursor.setAttribute('x2', cx); cursor.setAttribute('visibility', 'visible');
  };
  return g;
}

// Memory: the tile map at a step, the categories at the peak, memory over the steps.
function drawMemory() {
  const {m} = R;
  const body = document.getElementById('memory-body');
  const catColours = m.categories.map((c, i) => PALETTE[i % PALETTE.length]);
  let ipu = R.peakIpu;
  const controls = el('div', {class: 'row'});
  if (R.reports.length > 1) {
    const pick = el('select', {id: 'memory-ipu', onchange: e => { ipu = Number(e.target.value); show(); }},
                    ...R.reports.map((r, i) => el('option', {value: String(i), text: 'IPU ' + i})));
    pick.value = String(ipu);
    controls.append(el('label', {}, 'IPU ', pick));
  }
  if (R.training) controls.append(el('span', {class: 'muted', text: 'IPU 0, over the steps of a training step: ' +
    PHASES.map(ph => m.phases.find(q => q.phase === ph[0])).filter(q => q && q.steps > 0).map(q => q.steps + ' ' + q.phase).join(', ')}));
  const view = el('div');
  body.append(controls, view);
  let stopPlaying = () => {};
  function show() {
    stopPlaying();
    view.replaceChildren();
    const r = R.reports[ipu], cells = R.cells[ipu], tiles = m.tiles, K = r.steps.length;
    if (K === 0) { view.append(el('p', {class: 'muted', text: 'IPU ' + ipu + ' runs no step.'})); return; }
    const peakK = Math.max(0, r.peakK);
    // The tile map.
    const columns = Math.min(64, tiles);
    const map = el('div', {class: 'tilemap', id: 'tilemap', style: 'grid-template-columns: repeat(' + columns + ', 1fr)'});
    const tileDivs = [];
    for (let t = 0; t < tiles; ++t) {
      const d = el('div', {class: 'tile'});
      d.dataset.tile = t;
      tileDivs.push(d);
    }
    map.append(...tileDivs);
    const slider = el('input', {type: 'range', min: '0', max: String(K - 1), value: String(peakK), id: 'step-slider', 'aria-label': 'step'});
    const stepInfo = el('div', {id: 'step-info'});
    const tileInfo = el('div', {class: 'muted', id: 'tile-info', text: 'Point at a tile for its bytes.'});
    let k = peakK, pointed = -1;
    const approx = R.unit > 1 ? ' (to ' + R.unit + ' bytes)' : '';
    function describeTile() {
      if (pointed < 0) return;
      const b = cells[k * tiles + pointed], tp = r.tiles[pointed];
      tileInfo.textContent = 'tile ' + pointed + ': ' + grouped(b) + ' bytes at this step' + approx + ', ' + percent(b, r.capacity) +
        '; its peak ' + grouped(sum(tp.bytes)) + ' bytes during ' + (tp.k >= 0 ? r.steps[tp.k].label : '-');
    }
    function setStep(next) {
      k = Math.max(0, Math.min(K - 1, next));
      slider.value = String(k);
      const s = r.steps[k], layer = m.layers[s.node];
      for (let t = 0; t < tiles; ++t) tileDivs[t].style.background = tileColour(cells[k * tiles + t], r.capacity);
      tileDivs.forEach((d, t) => d.classList.toggle('selected', t === s.tile));
      stepInfo.replaceChildren(el('b', {text: 'Step ' + (k + 1) + ' of ' + K + ': ' + s.label}), ' (' + layer.layer + ', node ' + s.node + ')',
        el('br'), 'fullest tile ' + s.tile + ': ' + grouped(sum(s.bytes)) + ' bytes (' + percent(sum(s.bytes), r.capacity) + '); all tiles: ' +
        mib(sum(s.ipuBytes)) + (k === peakK ? '; the IPU\u2019s peak step' : ''));
      describeTile();
      charts.forEach(c => c.setCursor(k));
    }
    map.addEventListener('mouseover', e => { if (e.target.dataset.tile !== undefined) { pointed = Number(e.target.dataset.tile); describeTile(); } });
    slider.addEventListener('input', () => setStep(Number(slider.value)));
    let timer = 0;
    stopPlaying = () => { clearInterval(timer); timer = 0; play.textContent = 'play'; play.classList.remove('on'); };
    const play = el('button', {text: 'play', onclick: () => {
      if (timer) { stopPlaying(); return; }
      play.textContent = 'stop'; play.classList.add('on');
      timer = setInterval(() => setStep(k + 1 >= K ? 0 : k + 1), 120);
    }});
    const legend = el('div', {class: 'legend'}, '0', el('div', {class: 'scale', style: 'background: linear-gradient(90deg,' +
      VIRIDIS.map(c => 'rgb(' + c.join(',') + ')').join(',') + ')'}), grouped(r.capacity) + ' bytes',
      el('span', {class: 'swatch', style: 'background:#d62728; margin-left: 10px'}), 'over capacity');
    view.append(el('h3', {text: 'Tiles at a step (' + grouped(tiles) + ' tiles; the outlined one is the step\u2019s fullest)'}),
      el('div', {class: 'panel'},
        el('div', {class: 'row'}, el('button', {text: '\u25c0', 'aria-label': 'previous step', onclick: () => setStep(k - 1)}),
           el('button', {text: '\u25b6', 'aria-label': 'next step', onclick: () => setStep(k + 1)}),
           el('button', {text: 'peak', onclick: () => setStep(peakK)}), play, legend),
        slider, stepInfo, map, tileInfo));

    // The bytes by category at the peak.
    const atPeak = r.atPeak, peakTotal = sum(atPeak);
    const bar = el('div', {class: 'bar'}, ...atPeak.map((v, c) => el('div', {style: 'width:' + (100 * v / r.capacity) + '%; background:' + catColours[c],
      title: m.categories[c] + ': ' + grouped(v) + ' bytes'})));
    const catTable = el('table', {id: 'categories'}, el('tr', {}, el('th', {class: 'text', text: 'category'}), el('th', {text: 'at the peak (tile ' + r.peakTile + ')'}),
      el('th', {text: 'share of the tile'}), el('th', {text: 'IPU total (at its largest)'})));
    m.categories.forEach((name, c) => catTable.append(el('tr', {}, el('td', {class: 'text'}, el('span', {class: 'swatch', style: 'background:' + catColours[c]}), name),
      el('td', {text: grouped(atPeak[c])}), el('td', {text: percent(atPeak[c], r.capacity)}), el('td', {text: mib(r.totals[c])}))));
    if (r.peak > peakTotal) catTable.append(el('tr', {}, el('td', {class: 'text', text: 'alignment and gaps'}), el('td', {text: grouped(r.peak - peakTotal)}),
      el('td', {text: percent(r.peak - peakTotal, r.capacity)}), el('td', {text: ''})));
    view.append(el('h3', {text: 'By category at the peak: ' + grouped(r.peak) + ' of ' + grouped(r.capacity) + ' bytes'}), el('div', {class: 'panel'}, bar, el('div', {class: 'scroll'}, catTable)));

    // Memory over the steps: the IPU's, and its fullest tile's.
    const tipOf = kk => 'step ' + (kk + 1) + ': ' + r.steps[kk].label;
    const strip = R.training ? r.steps.map(s => PHASES.find(ph => s.label.startsWith(ph[0] + ' '))[1]) : null;
    const charts = [
      stackChart(m.categories.map((_, c) => r.steps.map(s => s.ipuBytes[c])), catColours,
                 {label: 'memory of all tiles over the steps', format: mib, onPick: setStep, tip: tipOf, strip}),
      stackChart(m.categories.map((_, c) => r.steps.map(s => s.bytes[c])), catColours,
                 {label: 'fullest tile over the steps', format: compact, onPick: setStep, tip: tipOf, strip, line: r.capacity, lineLabel: 'capacity ' + grouped(r.capacity)})];
    view.append(el('h3', {text: 'Memory over the steps, all tiles (always-live weights and code included); click a step to show it'}),
      el('div', {class: 'panel'}, keys(m.categories.map((c, i) => [c, catColours[i]]).concat(R.training ? PHASES.map(ph => ['band: ' + ph[0], ph[1]]) : [])), charts[0]),
      el('h3', {text: 'The fullest tile at each step'}), el('div', {class: 'panel'}, charts[1]));

    // The histogram and the fullest tiles and layers.
    const hist = el('table', {}, el('tr', {}, el('th', {class: 'text', text: 'tile peak'}), el('th', {text: 'tiles'}), el('th', {class: 'text', text: ''})));
    const most = Math.max(1, ...r.histogram), last = r.histogram.length - 1;
    r.histogram.forEach((count, b) => hist.append(el('tr', {}, el('td', {class: 'text', text: b < last ? (b * 100 / last) + '-' + ((b + 1) * 100 / last) + '%' : 'over 100%'}),
      el('td', {text: String(count)}), el('td', {class: 'text'}, el('div', {style: 'height:10px; background:' + (b < last ? viridis((b + 0.5) / last) : '#d62728') +
        '; width:' + (count ? Math.max(2, 300 * count / most) : 0) + 'px'})))));
    const fullestTiles = r.tiles.map((tp, t) => ({t, k: tp.k, total: sum(tp.bytes)})).sort((a, b) => b.total - a.total || a.t - b.t).slice(0, 10);
    const ft = el('table', {}, el('tr', {}, ...['tile', 'peak', 'share', 'during'].map((h, i) => el('th', {class: i === 3 ? 'text' : '', text: h}))));
    fullestTiles.forEach(f => ft.append(el('tr', {}, el('td', {text: String(f.t)}), el('td', {text: grouped(f.total)}), el('td', {text: percent(f.total, r.capacity)}),
      el('td', {class: 'text', text: f.k >= 0 ? r.steps[f.k].label : '-'}))));
    const fullestSteps = r.steps.map((s, kk) => ({kk, s, total: sum(s.bytes)})).sort((a, b) => b.total - a.total || a.kk - b.kk).slice(0, 10);
    const fl = el('table', {}, el('tr', {}, ...['step', 'tile', 'bytes', 'share'].map((h, i) => el('th', {class: i === 0 ? 'text' : '', text: h}))));
    fullestSteps.forEach(f => fl.append(el('tr', {style: 'cursor:pointer', onclick: () => setStep(f.kk)}, el('td', {class: 'text', text: f.s.label}),
      el('td', {text: String(f.s.tile)}), el('td', {text: grouped(f.total)}), el('td', {text: percent(f.total, r.capacity)}))));
    view.append(el('div', {class: 'row', style: 'align-items: flex-start'},
      el('div', {}, el('h3', {text: 'Tiles by their peak'}), el('div', {class: 'panel'}, hist)),
      el('div', {}, el('h3', {text: 'Fullest tiles'}), el('div', {class: 'panel'}, ft)),
      el('div', {}, el('h3', {text: 'Fullest steps (click to show)'}), el('div', {class: 'panel'}, fl))));
    if (r.overBound.length)
      view.append(el('p', {class: 'bad', text: r.overBound.length + ' layer(s) need more transients than the available memory proportion: ' +
        r.overBound.map(node => m.layers[node].path).join(', ')}));
    setStep(peakK);
  }
  show();
}
)html"
    R"html(
// Execution: cycles by IPU (or by training phase) and by step, and a timeline.
function drawExecution() {
  const {p} = R;
  const body = document.getElementById('execution-body');
  const used = KINDS.filter(k => R.steps.some(s => s[k[1]] > 0));
  const t = el('table', {id: 'cycles'}, el('tr', {}, el('th', {class: 'text', text: R.training ? 'phase' : ''}), el('th', {text: 'steps'}),
    ...used.map(k => el('th', {}, el('span', {class: 'swatch', style: 'background:' + k[2]}), k[0])), el('th', {text: 'cycles'}),
    el('th', {text: 'simulated ms'}), el('th', {text: 'host ms'})));
  const most = Math.max(1, ...R.groups.map(cyclesOf));
  for (const q of R.groups) {
    const c = cyclesOf(q);
    t.append(el('tr', {}, el('td', {class: 'text', text: q.name}), el('td', {text: String(q.steps)}),
      ...used.map(k => el('td', {text: grouped(q[k[1]]) + ' (' + percent(q[k[1]], c) + ')'})), el('td', {text: grouped(c)}),
      el('td', {text: fixed(1e3 * c / R.clock, 3)}), el('td', {text: fixed(q.host_seconds * 1e3, 2)})));
    t.append(el('tr', {}, el('td', {}), el('td', {colspan: String(used.length + 4), class: 'text'},
      el('div', {class: 'bar', style: 'max-width:' + Math.max(2, 900 * c / most) + 'px'},
        ...used.map(k => el('div', {style: 'width:' + (c ? 100 * q[k[1]] / c : 0) + '%; background:' + k[2], title: k[0] + ': ' + grouped(q[k[1]])}))))));
  }
  body.append(el('h3', {text: R.training ? 'Cycles of a training step\u2019s passes, by phase (the cycle model)'
                                        : 'Cycles of one batch, by phase (the cycle model; the seed\u2019s Fig. 3.2)'}), el('div', {class: 'panel scroll'}, t));

  const strip = R.training ? R.steps.map(s => PHASES.find(ph => ph[0] === s.phase)[1]) : null;
  body.append(el('h3', {text: 'Cycles of each step, in program order'}), el('div', {class: 'panel'},
    keys(used.map(k => [k[0], k[2]]).concat(R.training ? PHASES.map(ph => ['band: ' + ph[0], ph[1]]) : [])),
    stackChart(used.map(k => R.steps.map(s => s[k[1]])), used.map(k => k[2]), {label: 'cycles per step', bars: true, format: compact, height: 200, strip,
      tip: k => R.steps[k].label + ': ' + grouped(cyclesOf(R.steps[k])) + ' cycles'})));
  if (R.training) drawWindow(body, p.window); else drawTimeline(body);
}

// Each IPU's steps at their cycles: one batch through the IPUs, or pipelined, every IPU
// starting together on a batch of its own.
function drawTimeline(body) {
  const {p} = R;
  const lanes = p.ipus.map((_, i) => i).filter(i => p.ipus[i].steps > 0);
  if (p.host) lanes.push(-1);
  let pipelined = false;
  const holder = el('div');
  function draw() {
    const W = 1000, lane = 26, L = 64, T = 6, H = T + lane * lanes.length + 22;
    const clock = new Map(lanes.map(i => [i, 0]));
    let now = 0;
    const bars = [];
    for (const s of R.steps) {
      const c = cyclesOf(s), start = pipelined ? clock.get(s.ipu) : now;
      bars.push([s, start, c]);
      clock.set(s.ipu, start + c);
      now = start + c;
    }
    const end = Math.max(1, ...bars.map(([, a, c]) => a + c));
    const x = v => L + (W - L - 8) * v / end;
    const g = svgEl('svg', {viewBox: '0 0 ' + W + ' ' + H, id: 'timeline', role: 'img', 'aria-label': 'timeline per IPU'});
    lanes.forEach((i, row) => g.append(svgEl('text', {x: L - 6, y: T + row * lane + 16, 'text-anchor': 'end'}, i < 0 ? 'host' : 'IPU ' + i)));
    for (const [s, start, c] of bars)
      g.append(svgEl('rect', {x: x(start), y: T + lanes.indexOf(s.ipu) * lane + 2, width: Math.max(0.3, x(start + c) - x(start)), height: lane - 6,
        fill: opColour(s.op)}, svgEl('title', {}, s.path + ' (' + s.op + '): ' + grouped(c) + ' cycles')));
    g.append(svgEl('line', {class: 'axis', x1: L, x2: W - 8, y1: H - 20, y2: H - 20}), svgEl('text', {x: L, y: H - 6}, '0'),
      svgEl('text', {x: W - 8, y: H - 6, 'text-anchor': 'end'}, grouped(end) + ' cycles = ' + fixed(1e3 * end / R.clock, 3) + ' ms'));
    holder.replaceChildren(g);
  }
  const toggle = el('div', {class: 'row'});
  if (lanes.length > 1) {
    const one = el('button', {text: 'one batch through the IPUs', class: 'on'}), pipe = el('button', {text: 'pipelined (each IPU on its own batch)'});
    one.onclick = () => { pipelined = false; one.classList.add('on'); pipe.classList.remove('on'); draw(); };
    pipe.onclick = () => { pipelined = true; pipe.classList.add('on'); one.classList.remove('on'); draw(); };
    toggle.append(one, pipe, el('span', {class: 'muted', text: 'pipelined, the busiest IPU sets the pace: ' + fixed(p.pipelined_images_per_second, 1) + ' images/s'}));
  }
  draw();
  const ops = [...new Set(R.steps.map(s => s.op))];
  body.append(el('h3', {text: 'Timeline per IPU (steps coloured by op; point at one for its name)'}),
    el('div', {class: 'panel'}, toggle, keys(ops.map(o => [o, opColour(o)])), holder));
}

// A training step's window of micro-batches over the pipeline's stages (`ipu::pipeline_timing`):
// each stage's slots, forward (F), backward (B), both (X) or idle (.), then the update.
function drawWindow(body, w) {
  const W = 1000, lane = 22, L = 64, T = 6, H = T + lane * w.stages + 24;
  const colours = {F: PHASES[0][1], B: PHASES[2][1], X: '#b07aa1'};
  const slotW = (W - L - 8) / Math.max(1, w.slots);
  const g = svgEl('svg', {viewBox: '0 0 ' + W + ' ' + H, id: 'window', role: 'img', 'aria-label': 'pipeline window'});
  w.timelines.forEach((line, s) => {
    g.append(svgEl('text', {x: L - 6, y: T + s * lane + 15, 'text-anchor': 'end'}, 'IPU ' + s));
    [...line].forEach((c, slot) => {
      if (colours[c]) g.append(svgEl('rect', {x: L + slot * slotW, y: T + s * lane + 2, width: Math.max(0.5, slotW - (slotW > 3 ? 1 : 0)), height: lane - 6, fill: colours[c]},
        svgEl('title', {}, 'IPU ' + s + ', slot ' + (slot + 1) + ': ' + (c === 'F' ? 'forward' : c === 'B' ? 'backward' : 'forward and backward'))));
    });
  });
  const ramp = [w.part_slots[0], w.part_slots[0] + w.part_slots[1]];
  ramp.forEach(at => g.append(svgEl('line', {class: 'cursor', x1: L + at * slotW, x2: L + at * slotW, y1: T, y2: H - 22})));
  g.append(svgEl('text', {x: L, y: H - 6}, 'slot 1'), svgEl('text', {x: W - 8, y: H - 6, 'text-anchor': 'end'}, w.slots + ' slots'));
  const parts = el('table', {}, el('tr', {}, ...['', 'slots', 'cycles'].map(h => el('th', {text: h}))),
    ...[['ramp-up', 0], ['steady state', 1], ['ramp-down', 2]].map(([name, i]) => el('tr', {}, el('td', {class: 'text', text: name}),
      el('td', {text: grouped(w.part_slots[i])}), el('td', {text: grouped(w.part_cycles[i])}))),
    el('tr', {}, el('td', {class: 'text', text: 'update'}), el('td', {text: ''}), el('td', {text: grouped(w.update_cycles)})),
    el('tr', {}, el('td', {class: 'text', text: 'window'}), el('td', {text: grouped(w.slots)}), el('td', {text: grouped(w.cycles)})));
  const busy = el('table', {}, el('tr', {}, el('th', {class: 'text', text: 'stage'}), el('th', {text: 'busy cycles'}), el('th', {text: 'of the window'})),
    ...w.busy.map((b, s) => el('tr', {}, el('td', {class: 'text', text: 'IPU ' + s}), el('td', {text: grouped(b)}), el('td', {text: percent(b, w.cycles)}))));
  body.append(el('h3', {text: 'A step\u2019s window: ' + w.micro_batches + ' micro-batches, ' + w.schedule + ' over ' + w.stages +
      (w.stages === 1 ? ' stage' : ' stages') + ' (the cycle model; dashed: the ramps)'}),
    el('div', {class: 'panel'}, keys([['forward', colours.F], ['backward', colours.B], ['both', colours.X]]), g,
      el('div', {class: 'row', style: 'align-items: flex-start'}, parts, busy)));
}

// A table sortable by any column: `columns` are [name, value(row), format, isText].
function sortableTable(id, columns, rows) {
  const table = el('table', {id, class: 'sortable'});
  const headRow = el('tr');
  const tbody = el('tbody');
  const trs = rows.map(row => el('tr', {}, ...columns.map(([, value, format, text]) => el('td', {class: text ? 'text' : '', text: format(value(row), row)}))));
  let sortedBy = -1, descending = false;
  columns.forEach(([name, value, , text], c) => {
    const th = el('th', {class: text ? 'text' : '', text: name});
    th.addEventListener('click', () => {
      descending = sortedBy === c ? !descending : !text;
      sortedBy = c;
      headRow.querySelectorAll('th').forEach(h => h.removeAttribute('data-order'));
      th.dataset.order = descending ? 'desc' : 'asc';
      const order = rows.map((r, i) => i).sort((a, b) => {
        const va = value(rows[a]), vb = value(rows[b]);
        const cmp = typeof va === 'string' ? va.localeCompare(vb) : (va - vb);
        return (descending ? -cmp : cmp) || a - b;
      });
      tbody.append(...order.map(i => trs[i]));
    });
    headRow.append(th);
  });
  tbody.append(...trs);
  table.append(el('thead', {}, headRow), tbody);
  return {table, trs};
}

// The layers: one row per node.
function drawLayers() {
  const {m, p} = R;
  const body = document.getElementById('layers-body');
  const rows = m.layers.map(l => ({l, n: R.nodes[l.node], s: R.training ? null : p.steps[l.node]}));
  const g = x => grouped(x), t = x => x;
  const parts = R.training
    ? PHASES.map((ph, i) => [ph[0], r => r.n.byPhase[i], g]).filter((c, i) => R.nodes.some(n => n.byPhase[i] > 0))
    : [['compute', r => r.s.compute_cycles, g], ['exchange', r => r.s.exchange_cycles, g], ['sync', r => r.s.sync_cycles, g],
       ['link', r => r.s.link_cycles + r.s.host_cycles, g]];
  const columns = [
    ['node', r => r.l.node, String], ['path', r => r.l.path, t, true], ['op', r => r.l.layer, t, true], ['IPU', r => r.l.ipu, x => x < 0 ? 'host' : String(x)],
    ['shape', r => r.l.shape, t, true], ['type', r => r.l.type, t, true], ['params', r => r.l.params, g], ['MACs', r => r.l.macs, g],
    ['fullest tile bytes', r => r.n.tileBytes, g], ['tile', r => r.n.tile, x => x < 0 ? '-' : String(x)],
    ['cycles', r => r.n.cycles, g], ...parts,
    ['simulated \u00b5s', r => 1e6 * r.n.cycles / R.clock, x => fixed(x, 1)], ['host \u00b5s', r => r.n.host * 1e6, x => fixed(x, 1)]];
  const {table, trs} = sortableTable('layer-table', columns, rows);
  const count = el('span', {class: 'muted', id: 'layer-count'});
  const filter = el('input', {type: 'search', id: 'layer-filter', placeholder: 'filter: path or op, e.g. stage3 or conv 3x3', size: '40'});
  const apply = () => {
    const words = filter.value.toLowerCase().split(/\s+/).filter(w => w);
    let shown = 0;
    rows.forEach((r, i) => {
      const text = (r.l.path + ' ' + r.l.layer + ' ' + r.l.op).toLowerCase();
      const keep = words.every(w => text.includes(w));
      trs[i].hidden = !keep;
      shown += keep ? 1 : 0;
    });
    count.textContent = shown + ' of ' + rows.length + ' layers; click a column to sort';
  };
  filter.addEventListener('input', apply);
  apply();
  body.append(el('p', {class: 'muted', text: R.training ? 'Per node over a training step: the cycles of its forward, recompute, backward and update steps, and its fullest tile over them.'
                                                         : 'Per node: its step\u2019s cycles by part and its fullest tile then; the simulated time beside the host\u2019s measured time.'}),
    el('div', {class: 'row'}, filter, count), el('div', {class: 'panel tall'}, table));
}

// Comparing two reports: the summary figures side by side, and each layer's (matched by path).
function compareRuns(A, B, holder) {
  const peakOf = X => Math.max(...X.reports.map(r => r.peak));
  const figures = [
    ['target', X => X.m.target + ', ' + X.reports.length + (X.reports.length === 1 ? ' IPU' : ' IPUs') + (X.training ? ', training' : ''), false],
    ['nodes', X => X.m.layers.length, false], ['fits', X => X.m.fits ? 'yes' : 'no', false], ['batch', X => X.p.batch_size, false],
    ['peak bytes of a tile', peakOf, true], ['cycles (' + A.rate.cyclesLabel + ')', X => X.rate.cycles, true],
    ['simulated ' + A.rate.unit, X => X.rate.simulated, true], ['pipelined images/s', X => X.rate.pipelined === null ? '-' : X.rate.pipelined, true],
    ['measured ' + A.rate.unit + ' (host)', X => X.rate.measured === null ? '-' : X.rate.measured, true],
    ['host ms', X => X.rate.hostMs === null ? '-' : X.rate.hostMs, true]];
  const show = v => typeof v === 'number' ? (Number.isInteger(v) ? grouped(v) : fixed(v, 2)) : String(v);
  const t = el('table', {id: 'compare-summary'}, el('tr', {}, el('th', {class: 'text', text: ''}), el('th', {text: A.run.name}), el('th', {text: B.run.name}), el('th', {text: 'ratio'})));
  for (const [name, f, numeric] of figures) {
    const a = f(A), b = f(B);
    const both = numeric && typeof a === 'number' && typeof b === 'number' && b !== 0;
    t.append(el('tr', {}, el('td', {class: 'text', text: name}), el('td', {text: show(a)}), el('td', {text: show(b)}), el('td', {text: both ? fixed(a / b, 3) : ''})));
  }
  const paths = new Map(B.m.layers.map(l => [l.path, l]));
  const rows = A.m.layers.filter(l => paths.has(l.path)).map(l => {
    const o = paths.get(l.path), na = A.nodes[l.node], nb = B.nodes[o.node];
    return {path: l.path, op: l.layer, ipuA: l.ipu, ipuB: o.ipu, bytesA: na.tileBytes, bytesB: nb.tileBytes, ca: na.cycles, cb: nb.cycles,
            ha: na.host * 1e6, hb: nb.host * 1e6};
  });
  const g = x => grouped(x), t1 = x => x, d = x => (x > 0 ? '+' : '') + grouped(x);
  const {table} = sortableTable('compare-layers', [
    ['path', r => r.path, t1, true], ['op', r => r.op, t1, true], ['IPU', r => r.ipuA, String], ['IPU (other)', r => r.ipuB, String],
    ['tile bytes', r => r.bytesA, g], ['tile bytes (other)', r => r.bytesB, g], ['\u0394 bytes', r => r.bytesA - r.bytesB, d],
    ['cycles', r => r.ca, g], ['cycles (other)', r => r.cb, g], ['\u0394 cycles', r => r.ca - r.cb, d],
    ['host \u00b5s', r => r.ha, x => fixed(x, 1)], ['host \u00b5s (other)', r => r.hb, x => fixed(x, 1)]], rows);
  holder.replaceChildren(el('h3', {text: A.run.name + ' against ' + B.run.name}), el('div', {class: 'panel scroll'}, t),
    el('h3', {text: rows.length + ' layers in both, matched by path (' + (A.m.layers.length - rows.length) + ' only in this report)'}),
    el('div', {class: 'panel tall'}, table));
}
function drawCompare() {
  const body = document.getElementById('compare-body');
  const holder = el('div', {id: 'compare-view'});
  const input = el('input', {type: 'file', accept: '.html,text/html', id: 'compare-file'});
  input.addEventListener('change', () => {
    const file = input.files[0];
    if (!file) return;
    file.text().then(text => {
      const node = new DOMParser().parseFromString(text, 'text/html').getElementById('ipu-data');
      if (!node) { holder.replaceChildren(el('p', {class: 'bad', text: file.name + ' is not an ipu report (it has no ipu-data element).'})); return; }
      compareRuns(R, prepare(JSON.parse(node.textContent).runs[0]), holder);
    }).catch(e => window.ipuFail('cannot read ' + file.name + ': ' + e));
  });
  body.append(el('p', {class: 'muted'}, 'Open another report (its report.html) to compare it with this one: ', input), holder);
  if (runs.length > 1) compareRuns(R, runs[1], holder);
}

drawSummary();
drawMemory();
drawExecution();
drawLayers();
drawCompare();
if (window.ipuErrors.length === 0) document.body.dataset.status = 'ok';
document.body.dataset.renderMs = (performance.now() - started).toFixed(0);
document.body.dataset.loadMs = performance.now().toFixed(0);
})();
</script>
)html";

/// After the script: the end of the page.
inline constexpr char tail[] = "</body>\n</html>\n";

}  // namespace ipu::detail::html_page
