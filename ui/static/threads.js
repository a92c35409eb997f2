// A conversation's threads (DESIGN.md section 15): its main thread, the
// thread of each subagent (a conversation of its own, whose id is the
// conversation's, '~' and the thread's name) and the agent's side calls
// (exchanges of kind side: sent as they came, never stored as turns).
// The Threads navigation lists them with their turn counts; choosing a
// thread opens its own messages. Each exchange says its thread and why
// it was classified so (the rule or header the record gives).

import {call, seg} from './api.js';
import {h, num, convHash} from './dom.js';

// SIDE_SCAN is how many of the newest exchange records the side calls
// are counted in (a conversation keeps 200).
const SIDE_SCAN = 200;

// threadsNav loads and renders the Threads navigation of conversation d
// (a conversation, or one of its threads), with current the entry shown
// ('side' for the side calls, else an id). It is null for a conversation
// with no subagent's thread and no side call recorded.
export async function threadsNav(d, current, signal) {
  const parent = d.parent || d.id;
  const [threads, main, side] = await Promise.all([
    call(`conversations/${seg(parent)}/threads`, {signal}).then((l) => l.data || []),
    parent === d.id ? d : call(`conversations/${seg(parent)}`, {signal}).catch(absent),
    sideCalls(parent, signal),
  ]);
  if (!threads.length && !side.n) return null;
  const entry = (key, hash, label, count, kind, title) => h('li', {class: 'thread-' + kind},
    h('a', {href: hash, class: 'thread-link', title, 'aria-current': current === key ? 'page' : null},
      h('span', {class: 'thread-name'}, label),
      h('span', {class: 'muted small'}, ` \u00b7 ${count}`)));
  return h('nav', {'aria-label': 'Threads', class: 'threads'},
    h('ul', {},
      entry(parent, convHash(parent), 'Main thread', turns(main ? main.turns : 0), 'main',
        'The conversation: its memory is injected and its turns recorded'),
      threads.map((t) => entry(t.id, convHash(t.id), `Subagent ${t.thread || t.id}`, turns(t.turns), 'sub',
        `A subagent\u2019s thread of ${t.parent || parent}, with its own history`)),
      side.n ? entry('side', convHash(parent, 'exchanges') + '?thread=side', 'Side calls',
        `${num(side.n)}${side.more ? '+' : ''} recorded`, 'side', 'Sent as the agent sent them: nothing injected, nothing stored') : null));
}

function turns(n) {
  return `${num(n || 0)} ${n === 1 ? 'turn' : 'turns'}`;
}

// absent is a conversation not stored (a subagent's thread may be
// stored before its main thread is): no turns.
function absent(e) {
  if (e.status === 404) return null;
  throw e;
}

// sideCalls counts the side calls among conv's newest exchange records.
async function sideCalls(conv, signal) {
  try {
    const page = await call(`conversations/${seg(conv)}/exchanges`, {params: {limit: SIDE_SCAN}, signal});
    return {n: (page.data || []).filter((x) => x.kind === 'side').length, more: !!page.has_more};
  } catch (e) {
    if (e.status === 404) return {n: 0, more: false}; // no records, or no conversation stored yet
    throw e;
  }
}

// SIDE_REASONS say in words why a request was a side call (package
// thread's rules).
export const SIDE_REASONS = {
  header: 'X-Recall-Thread: side',
  marker: 'a known side-call prompt (a session title, a model router, a background helper)',
  no_tools: 'no tools, where the thread\u2019s turns send them',
  compaction: 'the agent\u2019s own compaction request',
};

// threadOf says which thread an exchange is in and why: {label, why},
// or null for a summariser's call (Recall's own, of no thread).
export function threadOf(x) {
  if (x.kind === 'summary') return null;
  const t = x.thread || 'main';
  const r = x.thread_reason || '';
  if (t === 'side') return {label: 'side call', why: SIDE_REASONS[r] || r || 'a side call'};
  if (t === 'main') {
    return {label: 'main thread', why: r === 'header' ? 'X-Recall-Thread: main' : 'no side-call rule held'};
  }
  const why = r === 'agent_id' ? 'x-claude-code-agent-id header' :
    r === 'header' ? `X-Recall-Thread: ${t}` : 'a subagent\u2019s thread (its header not recorded)';
  return {label: `thread ${t}`, why};
}

// threadLabel renders threadOf(x) for a row or the detail panel.
export function threadLabel(x) {
  const t = threadOf(x);
  if (!t) return null;
  return h('span', {class: 'xthread'},
    h('span', {class: 'thread'}, t.label),
    h('span', {class: 'why muted small'}, `why: ${t.why}`));
}
