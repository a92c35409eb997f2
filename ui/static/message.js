// A stored message as the exact JSON it arrived as, in any of the four
// protocols (chat completions, Responses items, Anthropic Messages,
// Gemini contents):
// its text, and its tool calls and results shown compactly.

import {h} from './dom.js';

const LONG = 1200; // characters of text shown before "Show all"
const ARGS = 120; // characters of a tool call's arguments on its one line

// role names the speaker, or the Responses item type.
export function role(m) {
  if (!m || typeof m !== 'object') return 'message';
  if (m.role) return m.role;
  if (m.type === 'function_call_output' || m.type === 'custom_tool_call_output') return 'tool';
  return m.type || 'message';
}

// parts reads a message into a list of {text} | {call: {name, args, id}} |
// {result: {id, text}} | {other: label}.
export function parts(m) {
  const out = [];
  if (!m || typeof m !== 'object') return out;
  switch (m.type) {
    case 'function_call':
    case 'custom_tool_call':
      out.push({call: {name: m.name, args: m.arguments ?? m.input, id: m.call_id}});
      return out;
    case 'function_call_output':
    case 'custom_tool_call_output':
      out.push({result: {id: m.call_id, text: textOf(m.output)}});
      return out;
    case 'reasoning':
      out.push({other: 'reasoning'});
      return out;
  }
  if (m.role === 'tool') {
    out.push({result: {id: m.tool_call_id, text: textOf(m.content)}});
    return out;
  }
  if (typeof m.content === 'string') {
    if (m.content) out.push({text: m.content});
  } else if (Array.isArray(m.content)) {
    for (const p of m.content) out.push(...part(p));
  }
  for (const c of m.tool_calls || []) {
    const f = c.function || c.custom || {};
    out.push({call: {name: f.name, args: f.arguments ?? f.input, id: c.id}});
  }
  if (m.function_call) out.push({call: {name: m.function_call.name, args: m.function_call.arguments}});
  for (const p of Array.isArray(m.parts) ? m.parts : []) out.push(...geminiPart(p)); // a Gemini content
  return out;
}

function part(p) {
  if (typeof p === 'string') return [{text: p}];
  if (!p || typeof p !== 'object') return [];
  switch (p.type) {
    case 'text': case 'input_text': case 'output_text':
      return [{text: p.text || ''}];
    case 'refusal':
      return [{text: p.refusal || ''}];
    case 'tool_use': case 'server_tool_use':
      return [{call: {name: p.name, args: p.input, id: p.id}}];
    case 'tool_result':
      return [{result: {id: p.tool_use_id, text: textOf(p.content)}}];
    case 'thinking': case 'redacted_thinking':
      return [{other: 'thinking'}];
    default:
      return [{other: p.type || 'part'}];
  }
}

// geminiPart reads one part of a Gemini content.
function geminiPart(p) {
  if (!p || typeof p !== 'object') return [];
  const fc = p.functionCall || p.function_call;
  const fr = p.functionResponse || p.function_response;
  if (p.thought) return [{other: 'thinking'}];
  if (fc) return [{call: {name: fc.name, args: fc.args, id: fc.id}}];
  if (fr) return [{result: {id: fr.id || fr.name, text: textOf(fr.response)}}];
  if (typeof p.text === 'string') return [{text: p.text}];
  return [{other: Object.keys(p)[0] || 'part'}];
}

function textOf(c) {
  if (c == null) return '';
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => (typeof p === 'string' ? p : p && (p.text ?? `[${p.type}]`)) || '').join('\n');
  return JSON.stringify(c);
}

function argsText(a) {
  if (a == null) return '';
  return typeof a === 'string' ? a : JSON.stringify(a);
}

function clip(s, n) {
  return s.length > n ? s.slice(0, n - 1) + '\u2026' : s;
}

// preview is one line of a message, at most n characters.
export function preview(m, n) {
  const text = parts(m).map((p) => p.text ?? (p.call ? `${p.call.name}(${argsText(p.call.args)})` :
    p.result ? `\u21b3 ${p.result.text}` : `[${p.other}]`)).join(' ');
  return clip(text.replace(/\s+/g, ' ').trim(), n) || '(no text)';
}

// body renders a message's content.
export function body(m) {
  const ps = parts(m);
  if (!ps.length) return h('p', {class: 'muted'}, '(no content)');
  return h('div', {class: 'content'}, ps.map((p) => {
    if (p.text != null) return text(p.text);
    if (p.call) return call(p.call);
    if (p.result) return result(p.result);
    return h('p', {class: 'muted small'}, `[${p.other}]`);
  }));
}

function text(t) {
  if (t.length <= LONG) return h('p', {class: 'text'}, t);
  return h('div', {},
    h('p', {class: 'text'}, t.slice(0, LONG) + '\u2026'),
    h('details', {}, h('summary', {}, `Show all ${t.length.toLocaleString()} characters`), h('p', {class: 'text'}, t)));
}

function call(c) {
  const args = argsText(c.args);
  const line = h('code', {class: 'call'}, h('span', {class: 'fn'}, c.name || 'tool'), '(', clip(args, ARGS), ')');
  if (args.length <= ARGS) return h('div', {class: 'tool'}, h('span', {class: 'tag'}, 'call'), line);
  return h('details', {class: 'tool'}, h('summary', {}, h('span', {class: 'tag'}, 'call'), line), h('pre', {}, args));
}

function result(r) {
  return h('details', {class: 'tool'},
    h('summary', {},
      h('span', {class: 'tag'}, 'result'),
      h('code', {}, r.id || ''),
      h('span', {class: 'muted small'}, ` ${r.text.length.toLocaleString()} characters: `),
      h('span', {class: 'muted small'}, clip(r.text.replace(/\s+/g, ' '), 80))),
    h('pre', {}, r.text));
}
