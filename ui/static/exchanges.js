// A conversation's exchanges as a timeline, newest first: one token bar
// per upstream call, with its thread and why it is in it, and a panel
// with the curation decisions of the selected one. The selection is in
// the address (#/c/<id>/exchanges/<xid>); Escape or Close clears it.
// ?thread=side shows the side calls only, ?thread=main the rest.

import {call, seg} from './api.js';
import {h, num, when, ms, range, convHash, notice, moreButton} from './dom.js';
import {head} from './conversation.js';
import {bar, total, SEGMENTS} from './chart.js';
import {preview} from './message.js';
import {threadsNav, threadLabel, SIDE_REASONS} from './threads.js';

const PAGE = 100;

const REASONS = {
  summarized: 'covered by the summary',
  budget: 'over the token budget',
  max_turns: 'beyond the turn limit',
  superseded: 'replaced by an edit or a regeneration',
  forgotten: 'forgotten',
};

export async function exchangesView(ctx, route) {
  const id = route.id;
  const base = `conversations/${seg(id)}/exchanges`;
  const only = route.thread === 'side' || route.thread === 'main' ? route.thread : '';
  const q = only ? '?thread=' + only : ''; // kept in the rows' addresses
  const d = await call(`conversations/${seg(id)}`, {signal: ctx.signal});
  let page;
  try {
    page = await call(base, {params: {limit: PAGE}, signal: ctx.signal});
  } catch (e) {
    if (e.status !== 404) throw e;
    ctx.main.append(...head(d, 'Exchanges'),
      notice('This server keeps no exchange records (its API has no exchanges route).'));
    return null;
  }
  const threads = await threadsNav(d, only === 'side' ? 'side' : d.id, ctx.signal);
  const byID = new Map();
  const records = [];
  const rows = h('ol', {class: 'timeline'});
  const panel = h('aside', {class: 'detail card', 'aria-labelledby': 'detail-title', hidden: true});
  let scale = 1;
  let selected = '';

  const shown = (x) => !only || (only === 'side') === (x.kind === 'side');
  const add = (data) => {
    for (const x of data) {
      byID.set(x.id, x);
      records.push(x);
    }
    scale = scaleOf(records);
    rows.replaceChildren(...records.filter(shown).map((x) => row(id, x, scale, x.id === selected, q)));
  };
  add(page.data || []);

  const more = moreButton('Load older exchanges', page, (after) => call(base, {params: {limit: PAGE, after}}), add);

  const legend = h('ul', {class: 'legend', 'aria-label': 'Legend'},
    SEGMENTS.map(([k, name]) => h('li', {}, h('span', {class: `swatch seg-${k}`}), name)),
    h('li', {}, h('span', {class: 'swatch budget'}), 'Budget'));

  ctx.main.append(...head(d, 'Exchanges', threads));
  if (only) {
    ctx.main.append(h('p', {class: 'filter muted'},
      only === 'side' ? 'Side calls only: sent as the agent sent them, never stored as turns. ' : 'The thread\u2019s turns only. ',
      h('a', {href: convHash(id, 'exchanges')}, 'Show every exchange')));
  }
  if (!records.length) {
    ctx.main.append(notice('No exchanges recorded yet: each upstream call for this conversation leaves one.'));
    return null;
  }
  ctx.main.append(legend, h('div', {class: 'split'}, h('div', {class: 'timeline-wrap'}, rows, h('div', {class: 'actions'}, more)), panel));

  // select shows the record xid in the panel ('' closes it).
  let loading = 0;
  const select = async (xid, focus) => {
    const my = ++loading;
    const was = selected;
    selected = xid;
    for (const a of rows.querySelectorAll('a.xrow')) {
      const on = a.dataset.xid === xid;
      if (on) a.setAttribute('aria-current', 'true');
      else a.removeAttribute('aria-current');
    }
    if (!xid) {
      panel.hidden = true;
      panel.replaceChildren();
      const back = was && rows.querySelector(`a.xrow[data-xid="${CSS.escape(was)}"]`);
      if (focus && back) back.focus();
      return;
    }
    let x = byID.get(xid);
    if (!x) {
      try {
        x = await call(`${base}/${seg(xid)}`);
      } catch (e) {
        if (my !== loading) return;
        panel.replaceChildren(h('h2', {id: 'detail-title', tabindex: -1}, 'Exchange'), notice(e.message, 'error'), closeButton(id, q));
        panel.hidden = false;
        return;
      }
    }
    if (my !== loading) return;
    panel.replaceChildren(...detail(id, base, x, scale, q));
    panel.hidden = false;
    if (focus) panel.querySelector('h2').focus();
  };

  const onKey = (ev) => {
    if (ev.key === 'Escape' && selected) {
      ev.preventDefault();
      location.hash = convHash(id, 'exchanges') + q;
    }
  };
  document.addEventListener('keydown', onKey);
  await select(route.xid, false);

  return {
    update(r) {
      if (r.view !== 'exchanges' || r.id !== id || (r.thread || '') !== (route.thread || '')) return false;
      if (r.xid !== selected) select(r.xid, true);
      return true;
    },
    cleanup() {
      document.removeEventListener('keydown', onKey);
    },
  };
}

// scaleOf is the tokens the chart's full width stands for: the largest
// prompt or budget of the conversation's own calls. A summariser call's
// budget is its model's whole window, which would shrink every chat bar
// to a sliver, so it is drawn on the chat calls' scale (clipped) unless
// there are only summary records.
function scaleOf(records) {
  const own = records.filter((x) => x.kind !== 'summary');
  const of = own.length ? own : records;
  return Math.max(1, ...of.map((x) => Math.max(total(x), x.budget || 0)));
}

function row(id, x, scale, on, q) {
  return h('li', {},
    h('a', {href: convHash(id, 'exchanges/' + encodeURIComponent(x.id)) + q, class: `xrow kind-${x.kind || 'chat'}`, 'data-xid': x.id,
      'aria-current': on ? 'true' : null},
      h('span', {class: 'xmeta'},
        when(x.created_at),
        kind(x),
        threadLabel(x),
        h('span', {class: `badge status-${x.status}`}, (x.status || '').replace(/_/g, ' ')),
        h('span', {class: 'muted small'}, `${x.model || ''} \u00b7 ${num(total(x))} tokens` +
          (x.dropped && x.dropped.length ? ` \u00b7 ${x.dropped.length} dropped` : ''))),
      bar(x, scale)));
}

// kind labels a record by its kind: a chat call, a tool round, a side
// call (with the rule that made it one), or a summariser call (Recall's
// own, coloured apart).
function kind(x) {
  const k = x.kind || 'chat';
  if (k !== 'side' || !x.thread_reason) return h('span', {class: `kind kind-${k}`}, k);
  return h('span', {class: `kind kind-${k}`, title: SIDE_REASONS[x.thread_reason] || x.thread_reason},
    `${k}: ${x.thread_reason}`);
}

function closeButton(id, q) {
  return h('button', {type: 'button', class: 'quiet close', 'aria-label': 'Close the detail',
    onclick: () => { location.hash = convHash(id, 'exchanges') + q; }}, 'Close');
}

function detail(id, base, x, scale, q) {
  const t = x.tokens || {};
  const lat = x.latency_ms || {};
  const est = t.estimated_input;
  const rep = t.reported_input;
  const diff = typeof est === 'number' && typeof rep === 'number' && est > 0 ?
    ` (${rep >= est ? '+' : ''}${num(rep - est)}, ${((rep / est - 1) * 100).toFixed(1)}%)` : '';
  const dropped = x.dropped || [];
  const cut = x.cut || [];
  const messages = h('div', {class: 'sent'});
  const show = h('button', {type: 'button', class: 'quiet'}, 'Show the messages sent');
  show.addEventListener('click', async () => {
    show.disabled = true;
    try {
      const r = await call(`${base}/${seg(x.id)}`, {params: {render: 'messages'}});
      messages.replaceChildren(sent(r.messages || []), sentJSON(r.sent));
      show.hidden = true;
    } catch (e) {
      messages.replaceChildren(notice(e.message, 'error'));
      show.disabled = false;
    }
  });
  return [
    h('div', {class: 'detail-head'},
      h('h2', {id: 'detail-title', tabindex: -1}, 'Exchange ', h('span', {class: 'id'}, x.id)),
      closeButton(id, q)),
    h('p', {class: 'xmeta'},
      when(x.created_at),
      kind(x),
      h('span', {class: `badge status-${x.status}`},
        `${(x.status || '').replace(/_/g, ' ')}${x.http_status ? ` (HTTP ${x.http_status})` : ''}`),
      h('span', {}, x.model || '')),
    h('p', {class: 'muted small'}, `${x.ingress || '—'} \u2192 ${x.upstream || '—'}${x.stream ? ', streamed' : ''}`),
    threadLabel(x) ? h('p', {class: 'xmeta'}, threadLabel(x)) : null,
    bar(x, scale, 28),
    h('h3', {}, 'Context'),
    h('ul', {class: 'decisions'},
      h('li', {}, x.summary ? `Summary through seq ${x.summary.through}, ${num(x.summary.tokens)} tokens` : 'No summary'),
      (x.included || []).map((r) => h('li', {class: 'kept'}, `${range(r)} kept`)),
      dropped.map((r) => h('li', {class: 'dropped'},
        `${range(r)} dropped: ${r.reason}`, h('span', {class: 'muted'}, ` (${REASONS[r.reason] || r.reason}` +
          (r.turns ? `, ${num(r.turns)} ${r.turns === 1 ? 'turn' : 'turns'})` : ')')))),
      cut.map((c) => h('li', {class: 'cut'}, `seq ${c.seq} tool result cut from ${num(c.chars_before)} to ${num(c.chars_after)} characters`)),
      h('li', {}, `${num(x.repaired_calls || 0)} tool ${x.repaired_calls === 1 ? 'call' : 'calls'} repaired`),
      (x.committed || []).map((r) => h('li', {class: 'committed'}, `${range(r)} committed`))),
    h('h3', {}, 'Tokens'),
    h('dl', {class: 'pairs'},
      SEGMENTS.map(([k, name]) => pair(name, num(t[k] || 0))),
      pair('Budget', num(x.budget)),
      pair('Estimated input', num(est)),
      pair('Calibrated input', [num(t.calibrated_input ?? est),
        h('span', {class: 'muted'}, ` (ratio ${Number(x.calibration || 1).toFixed(2)})`)]),
      pair('Reported input', [num(rep), diff]),
      pair('Cached', num(t.cached)),
      // Only Anthropic reports the tokens written to its prompt cache.
      x.upstream === 'messages' || t.cache_creation ? pair('Written to cache', num(t.cache_creation || 0)) : null),
    h('h3', {}, 'Latency'),
    h('dl', {class: 'pairs'},
      pair('First byte', ms(lat.first_byte)),
      pair('Upstream', ms(lat.upstream)),
      pair('Total', ms(lat.total)),
      pair('Recall\u2019s own', ms(lat.recall))),
    h('div', {class: 'actions'}, show),
    messages,
  ];
}

function pair(k, v) {
  return h('div', {}, h('dt', {}, k), h('dd', {}, v));
}

// sent lists the messages an exchange sent, as it sent them: a tool
// result cut, a call repair left out, a summary since replaced by a
// later one (not lost: summaries are remade, and only the newest is
// kept), each said so.
function sent(list) {
  return h('ol', {class: 'sent-list'}, list.map((m) => h('li', {class: 'msg kind-' + m.kind + (m.replaced ? ' is-replaced' : '')},
    h('div', {class: 'meta'},
      h('span', {class: 'role'}, m.role || m.kind),
      h('span', {class: 'muted small'}, [m.role ? m.kind : '', m.seq != null ? `seq ${m.seq}` : ''].filter(Boolean).join(' \u00b7 ')),
      m.forgotten ? h('span', {class: 'flag flag-forgotten'}, 'forgotten') : null,
      m.replaced ? h('span', {class: 'flag flag-replaced'}, 'replaced') : null,
      m.cut ? h('span', {class: 'flag flag-cut'}, 'cut') : null,
      m.repaired ? h('span', {class: 'flag flag-repaired'}, 'repaired') : null),
    h('p', {class: 'snippet'}, m.content == null ? missing(m) : preview(m, 400)))));
}

// missing says why a message sent shows no content.
function missing(m) {
  if (m.kind === 'instruction') return '(instructions are not stored)';
  if (m.replaced) return '(replaced by a later summary)';
  if (m.repaired) return '(left out by repair: its calls were never answered)';
  if (m.forgotten) return '(content forgotten)';
  return '(not stored)';
}

// sentJSON shows the context as the upstream's protocol carried it.
function sentJSON(s) {
  if (!s) return null;
  const body = {instructions: s.instructions, messages: s.messages};
  return h('details', {class: 'sent-json'},
    h('summary', {}, `The context as sent, in ${s.protocol}` + (s.complete ? '' : ' (incomplete: some of it is no longer stored)')),
    h('pre', {}, JSON.stringify(body, null, 2)));
}
