// The inspector's router: the address's hash names the view, so every
// view is linkable (#/, #/?q=words, #/c/<id>, #/c/<id>/exchanges,
// #/c/<id>/exchanges/<xid>, #/c/<id>/exchanges?thread=side; a subagent's
// thread by its id, <id>~<name>). Each view renders into <main>, which
// says which view it shows (data-view) and whether it is still loading
// (aria-busy).

import {session, clearSession} from './api.js';
import {h, notice} from './dom.js';
import {signIn} from './signin.js';
import {listView} from './list.js';
import {conversationView} from './conversation.js';
import {exchangesView} from './exchanges.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
const signout = document.getElementById('signout');

const views = {list: listView, conversation: conversationView, exchanges: exchangesView, missing: missingView};

let generation = 0;
let current = null; // what the mounted view returned: {update(route), cleanup()}
let aborter = null;

// parse reads the route from location.hash.
export function parse(hash) {
  const raw = hash.replace(/^#/, '') || '/';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  let parts;
  try {
    parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return {view: 'missing'};
  }
  if (parts.length === 0) return {view: 'list', q: params.get('q') || ''};
  if (parts[0] === 'c' && parts.length === 2) {
    return {view: 'conversation', id: parts[1], seq: params.get('seq') || ''};
  }
  if (parts[0] === 'c' && parts[2] === 'exchanges' && parts.length <= 4) {
    return {view: 'exchanges', id: parts[1], xid: parts[3] || '', thread: params.get('thread') || ''};
  }
  return {view: 'missing'};
}

function header(s) {
  nav.hidden = !s;
  signout.hidden = !s;
  who.textContent = !s ? '' : s.tenant ? `Admin key, tenant ${s.tenant}` : 'Signed in';
}

async function render() {
  const my = ++generation;
  const s = session();
  header(s);
  const route = parse(location.hash);
  if (s && current && current.update && current.update(route)) return;
  if (current && current.cleanup) current.cleanup();
  current = null;
  if (aborter) aborter.abort();
  aborter = new AbortController();
  main.setAttribute('aria-busy', 'true');
  main.dataset.view = s ? route.view : 'signin';
  main.replaceChildren();
  if (!s) {
    signIn(main, () => render());
    main.setAttribute('aria-busy', 'false');
    return;
  }
  const ctx = {
    main,
    signal: aborter.signal,
    stale: () => my !== generation,
  };
  try {
    const mounted = await views[route.view](ctx, route);
    if (ctx.stale()) return;
    current = mounted || null;
  } catch (e) {
    if (ctx.stale() || e.name === 'AbortError') return;
    main.replaceChildren(
      h('h1', {tabindex: -1}, e.status === 404 ? 'Not found' : 'Something went wrong'),
      notice(e.message, 'error'),
      e.status === 401 ? h('p', {}, 'The key may have been revoked: sign out and sign in again.') : null,
      h('p', {}, h('a', {href: '#/'}, 'Back to the conversations')));
  }
  if (ctx.stale()) return;
  main.setAttribute('aria-busy', 'false');
  const title = main.querySelector('h1');
  if (title && !main.contains(document.activeElement)) title.focus({preventScroll: false});
}

function missingView(ctx) {
  ctx.main.append(
    h('h1', {tabindex: -1}, 'Not found'),
    h('p', {}, 'This address names no view. ', h('a', {href: '#/'}, 'Back to the conversations')));
}

signout.addEventListener('click', () => {
  clearSession();
  if (current && current.cleanup) current.cleanup();
  current = null;
  if (location.hash && location.hash !== '#/') location.hash = '#/';
  else render();
});

window.addEventListener('hashchange', () => render());
render();
