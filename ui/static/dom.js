// Building the page's DOM. Text always goes in as text nodes, never as
// markup, so stored message text cannot become elements or script.

const SVG = 'http://www.w3.org/2000/svg';

// h makes an HTML element: h('a', {href: '#/'}, 'text', child, [more]).
// Props starting with "on" add listeners; true sets an empty attribute;
// null, undefined and false are left out.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  add(el, children);
  return el;
}

// s makes an SVG element with the given attributes.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v != null && v !== false) el.setAttribute(k, String(v));
  }
  add(el, children);
  return el;
}

function add(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const numbers = new Intl.NumberFormat();

// num formats a count; a missing one is a dash.
export function num(n) {
  return typeof n === 'number' && Number.isFinite(n) ? numbers.format(n) : '—';
}

// when makes a <time> for Unix seconds.
export function when(sec) {
  if (!sec) return h('span', {class: 'muted'}, '—');
  const d = new Date(sec * 1000);
  return h('time', {datetime: d.toISOString()},
    d.toLocaleString(undefined, {dateStyle: 'medium', timeStyle: 'short'}));
}

// ms formats milliseconds.
export function ms(n) {
  if (typeof n !== 'number') return '—';
  return n >= 10000 ? `${(n / 1000).toFixed(1)} s` : `${numbers.format(n)} ms`;
}

// range formats an inclusive seq range.
export function range(r) {
  return r.from === r.to ? `seq ${r.from}` : `seq ${r.from}–${r.to}`;
}

// link makes a link to a view of the page.
export function link(hash, ...children) {
  return h('a', {href: hash}, ...children);
}

// convHash is the address of a conversation's view.
export function convHash(id, sub) {
  return '#/c/' + encodeURIComponent(id) + (sub ? '/' + sub : '');
}

// moreButton makes the button under a paged list that loads the page
// after page, and the next after that on each press: next(after) fetches
// the page after the id after, add shows its data. It hides once no page
// is left and says a failed load beside itself.
export function moreButton(label, page, next, add) {
  const more = h('button', {type: 'button', class: 'quiet', hidden: !page.has_more}, label);
  let last = page.last_id;
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const p = await next(last);
      add(p.data || []);
      last = p.last_id;
      more.hidden = !p.has_more;
    } catch (e) {
      more.after(notice(e.message, 'error'));
    }
    more.disabled = false;
  });
  return more;
}

// notice makes a message box; an error is announced (role=alert).
export function notice(text, kind = 'info') {
  return h('p', {class: `notice ${kind}`, role: kind === 'error' ? 'alert' : null}, text);
}
