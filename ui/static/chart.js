// The token bar of an exchange: what it sent (instructions, the tool
// definitions, summary, history, new messages) and what came back
// (output), stacked, against the tenant's budget line.

import {s, num} from './dom.js';

export const SEGMENTS = [
  ['instructions', 'Instructions'],
  ['tools', 'Tools'],
  ['summary', 'Summary'],
  ['history', 'History'],
  ['new', 'New'],
  ['output', 'Output'],
];

const W = 1000;

// total is the length of an exchange's bar.
export function total(x) {
  const t = x.tokens || {};
  return SEGMENTS.reduce((sum, [k]) => sum + (t[k] || 0), 0);
}

// label says what the bar shows, for screen readers.
export function label(x) {
  const t = x.tokens || {};
  return 'Tokens: ' + SEGMENTS.map(([k]) => `${k} ${num(t[k] || 0)}`).join(', ') +
    (x.budget ? `; budget ${num(x.budget)}` : '');
}

// bar draws x on a scale where scale tokens fill the width.
export function bar(x, scale, height = 22) {
  const t = x.tokens || {};
  const unit = W / Math.max(scale, 1);
  const svg = s('svg', {role: 'img', 'aria-label': label(x), viewBox: `0 0 ${W} ${height}`,
    preserveAspectRatio: 'none', class: 'bar', height, focusable: 'false'});
  svg.append(s('rect', {x: 0, y: 0, width: W, height, class: 'track'}));
  let at = 0;
  for (const [k, name] of SEGMENTS) {
    const n = t[k] || 0;
    if (!n) continue;
    const w = n * unit;
    svg.append(s('rect', {x: at, y: 2, width: Math.max(w, 1.5), height: height - 4, class: `seg seg-${k}`},
      s('title', {}, `${name}: ${num(n)} tokens`)));
    at += w;
  }
  if (x.budget && x.budget <= scale) { // a budget past the scale (a summariser's window) is not drawn
    const bx = Math.min(x.budget * unit, W - 1);
    svg.append(s('line', {x1: bx, x2: bx, y1: 0, y2: height, class: 'budget', 'vector-effect': 'non-scaling-stroke'},
      s('title', {}, `Budget: ${num(x.budget)} tokens`)));
  }
  return svg;
}
