// The conversations of the signed-in tenant, newest first, and a search
// over their messages.

import {call} from './api.js';
import {h, num, when, convHash, notice, moreButton} from './dom.js';
import {preview, role} from './message.js';

const PAGE = 50;

export async function listView(ctx, route) {
  const q = route.q;
  const input = h('input', {id: 'q', name: 'q', type: 'search', value: q, autocomplete: 'off',
    placeholder: 'Words in any message'});
  const form = h('form', {class: 'search', role: 'search'},
    h('label', {for: 'q'}, 'Search messages'), input, h('button', {type: 'submit'}, 'Search'),
    q ? h('a', {href: '#/', class: 'clear'}, 'Clear') : null);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = input.value.trim();
    location.hash = v ? '#/?q=' + encodeURIComponent(v) : '#/';
  });
  if (q) {
    const res = await call('search', {params: {q, limit: PAGE}, signal: ctx.signal});
    ctx.main.append(h('h1', {tabindex: -1}, 'Search'), form, hits(q, res.data || []));
    return;
  }
  const page = await call('conversations', {params: {limit: PAGE}, signal: ctx.signal});
  const body = h('tbody');
  const addRows = (data) => body.append(...data.map(row));
  addRows(page.data || []);
  const more = moreButton('Load more', page, (after) => call('conversations', {params: {limit: PAGE, after}}), addRows);
  const empty = !(page.data || []).length;
  ctx.main.append(
    h('h1', {tabindex: -1}, 'Conversations'),
    form,
    empty ? notice('No conversations yet: they appear here once a client talks through Recall.') :
      h('div', {class: 'table-wrap'}, h('table', {class: 'conversations'},
        h('thead', {}, h('tr', {},
          h('th', {scope: 'col'}, 'Conversation'), h('th', {scope: 'col'}, 'Status'),
          h('th', {scope: 'col', class: 'n'}, 'Turns'), h('th', {scope: 'col', class: 'n'}, 'Tokens'),
          h('th', {scope: 'col'}, 'Updated'))),
        body)),
    h('div', {class: 'actions'}, more));
}

function row(c) {
  return h('tr', {},
    h('td', {},
      h('a', {href: convHash(c.id), class: 'id'}, c.id),
      c.parent ? h('div', {class: 'muted small thread-of'}, `a subagent\u2019s thread of ${c.parent}`) : null,
      c.title ? h('div', {class: 'muted small'}, c.title) : null),
    h('td', {}, status(c.status)),
    h('td', {class: 'n'}, num(c.turns)),
    h('td', {class: 'n'}, num(c.tokens)),
    h('td', {}, when(c.updated_at)));
}

export function status(st) {
  return h('span', {class: `badge status-${String(st || 'active').replace(/[^a-z_]/g, '')}`},
    String(st || 'active').replace(/_/g, ' '));
}

function hits(q, data) {
  if (!data.length) return notice(`No messages match \u201c${q}\u201d.`);
  return h('section', {'aria-labelledby': 'hits-title'},
    h('h2', {id: 'hits-title'}, `${data.length} ${data.length === 1 ? 'message matches' : 'messages match'} \u201c${q}\u201d`),
    h('ol', {class: 'hits'}, data.map((m) => h('li', {class: 'hit'},
      h('div', {class: 'meta'},
        h('a', {href: convHash(m.conversation) + '?seq=' + m.seq, class: 'id'}, m.conversation),
        h('span', {class: 'muted'}, ` seq ${m.seq} \u00b7 turn ${m.turn} \u00b7 ${role(m)}`),
        (m.flags || []).map((f) => h('span', {class: `flag flag-${f}`}, f))),
      h('p', {class: 'snippet'}, preview(m, 280))))));
}
