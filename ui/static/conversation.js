// One conversation: its state, summary, episodes and stored messages,
// including those superseded by an edit or forgotten, flagged.

import {call, seg} from './api.js';
import {h, num, when, convHash, notice, moreButton} from './dom.js';
import {status} from './list.js';
import {role, body} from './message.js';
import {threadsNav} from './threads.js';

const PAGE = 200;

// head is the top of both views of a conversation: where it sits (a
// subagent's thread under its conversation), its name, its threads
// (threads, a threadsNav, or null) and the two tabs.
export function head(d, active, threads) {
  const tab = (name, sub) => h('a', {href: convHash(d.id, sub), class: 'tab',
    'aria-current': active === name ? 'page' : null}, name);
  return [
    h('nav', {'aria-label': 'Breadcrumb', class: 'crumbs'}, h('a', {href: '#/'}, 'Conversations'), ' / ',
      d.parent ? [h('a', {href: convHash(d.parent), class: 'parent'}, d.parent), ' / '] : null,
      h('span', {class: 'id'}, d.id)),
    h('h1', {tabindex: -1}, d.title || (d.thread ? `Subagent ${d.thread}` : d.id), ' ', status(d.status)),
    d.parent ? h('p', {class: 'muted small'}, `A subagent\u2019s thread of ${d.parent}: its own history, never sent with the main thread\u2019s.`) : null,
    threads,
    h('nav', {'aria-label': 'Conversation views', class: 'tabs'}, tab('Messages', ''), tab('Exchanges', 'exchanges')),
  ].filter(Boolean); // append would write a null as text
}

export async function conversationView(ctx, route) {
  const base = `conversations/${seg(route.id)}`;
  const params = {limit: PAGE, order: 'asc', include: 'superseded,forgotten'};
  const [d, page] = await Promise.all([
    call(base, {signal: ctx.signal}),
    call(base + '/messages', {params, signal: ctx.signal}),
  ]);
  const threads = await threadsNav(d, d.id, ctx.signal);
  const list = h('ol', {class: 'messages'});
  const add = (data) => list.append(...data.map(message));
  add(page.data || []);
  const more = moreButton('Load more messages', page, (after) => call(base + '/messages', {params: {...params, after}}), add);

  const cap = d.capacity || {};
  const use = d.usage || {};
  ctx.main.append(
    ...head(d, 'Messages', threads),
    h('dl', {class: 'stats'},
      stat('Turns stored', num(cap.turns_stored ?? d.turns)),
      stat('Turns summarised', num(cap.turns_summarized)),
      stat('Messages', num(d.messages)),
      stat('Tokens stored', `${num(cap.tokens_stored ?? d.tokens)} of ${num(cap.budget_tokens)} budget`),
      stat('Model', d.model || '—'),
      stat('Calibration', calibration(d.calibration)),
      stat('Upstream usage', `${num(use.prompt_tokens)} in, ${num(use.completion_tokens)} out`),
      stat('Created', when(d.created_at)),
      stat('Updated', when(d.updated_at))),
    h('div', {class: 'columns'},
      h('section', {class: 'card', 'aria-labelledby': 'summary-title'},
        h('h2', {id: 'summary-title'}, 'Summary'),
        d.summary ?
          [h('p', {class: 'muted small'}, `Stands in for ${num(cap.turns_summarized)} turns in ${num(cap.summary_tokens)} tokens` +
            (use.summaries ? `; written ${num(use.summaries)} times.` : '.')),
          h('p', {class: 'text summary-text'}, d.summary)] :
          h('p', {class: 'muted'}, 'No summary yet: every stored turn can still be sent as it is.')),
      h('section', {class: 'card', 'aria-labelledby': 'episodes-title'},
        h('h2', {id: 'episodes-title'}, 'Episodes'),
        episodes(d))),
    h('section', {'aria-labelledby': 'messages-title'},
      h('h2', {id: 'messages-title'}, 'Messages'),
      (page.data || []).length ? list : notice('No stored messages.'),
      h('div', {class: 'actions'}, more)));

  if (route.seq) {
    const target = document.getElementById('m-' + route.seq);
    if (target) {
      target.classList.add('found');
      target.scrollIntoView({block: 'center'});
    }
  }
}

// calibration says how the upstream counts this model's prompts against
// Recall's estimate: the ratio applied to the budget, over how many samples.
function calibration(c) {
  if (!c) return '—';
  const ratio = `ratio ${Number(c.ratio).toFixed(2)}`;
  return h('span', {class: 'calibration'}, ratio,
    h('span', {class: 'muted small'}, c.samples ? ` over ${num(c.samples)} ${c.samples === 1 ? 'sample' : 'samples'}` : ' (not learned yet)'));
}

function stat(label, value) {
  return h('div', {}, h('dt', {}, label), h('dd', {}, value));
}

function episodes(d) {
  const sealed = d.episodes || [];
  return h('ol', {class: 'episodes'},
    sealed.map((e) => h('li', {},
      h('strong', {}, `Episode ${e.n}`), ` seq ${e.from_seq}\u2013${e.to_seq}`,
      e.title ? h('span', {}, ` \u00b7 ${e.title}`) : null,
      h('span', {class: 'muted small'}, ' \u00b7 sealed '), when(e.sealed_at))),
    h('li', {}, h('strong', {}, `Episode ${d.episode || 1}`), h('span', {class: 'muted'}, ' (open)')));
}

function message(m) {
  const flags = m.flags || [];
  const r = role(m);
  return h('li', {id: 'm-' + m.seq, class: ['msg', 'role-' + r.replace(/[^a-z_]/g, ''), ...flags.map((f) => 'is-' + f)].join(' ')},
    h('div', {class: 'meta'},
      h('span', {class: 'role'}, r),
      flags.map((f) => h('span', {class: `flag flag-${f}`}, f)),
      h('span', {class: 'muted small'}, `seq ${m.seq} \u00b7 turn ${m.turn} \u00b7 episode ${m.episode} \u00b7 ${num(m.tokens)} tokens \u00b7 `),
      when(m.created_at)),
    body(m));
}
