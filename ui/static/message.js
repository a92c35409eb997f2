// A message as the API shows it: its protocol's codec read its canonical
// role and its text (words, each tool call's name and arguments, each tool
// result's text, one a line), so nothing here reads any protocol's JSON.
// A tool result is shown folded; an agent's <system-reminder> blocks are
// left out of one-line previews.

import {h} from './dom.js';

const LONG = 1200; // characters of text shown before "Show all"

// role is the message's canonical role (user, assistant, tool, system,
// developer).
export function role(v) {
  return (v && v.role) || 'message';
}

// parts reads a message's view into a list of {text} | {result: {text}}.
export function parts(v) {
  const t = (v && typeof v.text === 'string') ? v.text : '';
  if (!t) return [];
  return v.role === 'tool' ? [{result: {text: t}}] : [{text: t}];
}

const REMINDERS = /<system-reminder>[\s\S]*?<\/system-reminder>/g;

function clip(s, n) {
  return s.length > n ? s.slice(0, n - 1) + '\u2026' : s;
}

// preview is one line of a message, at most n characters.
export function preview(v, n) {
  const text = parts(v).map((p) => p.text ?? `\u21b3 ${p.result.text}`).join(' ');
  return clip(text.replace(REMINDERS, '').replace(/\s+/g, ' ').trim(), n) || '(no text)';
}

// body renders a message's content.
export function body(v) {
  const ps = parts(v);
  if (!ps.length) return h('p', {class: 'muted'}, '(no text)');
  return h('div', {class: 'content'}, ps.map((p) => (p.text != null ? text(p.text) : result(p.result))));
}

function text(t) {
  if (t.length <= LONG) return h('p', {class: 'text'}, t);
  return h('div', {},
    h('p', {class: 'text'}, t.slice(0, LONG) + '\u2026'),
    h('details', {}, h('summary', {}, `Show all ${t.length.toLocaleString()} characters`), h('p', {class: 'text'}, t)));
}

function result(r) {
  return h('details', {class: 'tool'},
    h('summary', {},
      h('span', {class: 'tag'}, 'result'),
      h('span', {class: 'muted small'}, ` ${r.text.length.toLocaleString()} characters: `),
      h('span', {class: 'muted small'}, clip(r.text.replace(/\s+/g, ' '), 80))),
    h('pre', {}, r.text));
}
