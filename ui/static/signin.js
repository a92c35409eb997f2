// Sign-in: the key is tried against the API before it is kept, so a
// wrong key shows the API's own error and nothing is stored.

import {call, saveSession} from './api.js';
import {h} from './dom.js';

export function signIn(main, done) {
  const error = h('p', {class: 'notice error', id: 'signin-error', role: 'alert', hidden: true});
  const key = h('input', {id: 'key', name: 'key', type: 'password', autocomplete: 'off', spellcheck: 'false',
    required: true, 'aria-describedby': 'signin-error'});
  const tenant = h('input', {id: 'tenant', name: 'tenant', type: 'text', autocomplete: 'off', spellcheck: 'false',
    'aria-describedby': 'tenant-hint'});
  const button = h('button', {type: 'submit', class: 'primary'}, 'Sign in');
  const form = h('form', {class: 'card signin', novalidate: true},
    h('h1', {tabindex: -1}, 'Sign in'),
    h('p', {class: 'muted'}, 'Sign in with a tenant\u2019s API key, or with the admin key and the tenant it acts on. ' +
      'The key stays in this tab only and is sent to this server only.'),
    h('div', {class: 'field'}, h('label', {for: 'key'}, 'API key'), key),
    h('div', {class: 'field'},
      h('label', {for: 'tenant'}, 'Tenant'), tenant,
      h('small', {id: 'tenant-hint', class: 'muted'}, 'Only with the admin key: a tenant id.')),
    error,
    h('div', {class: 'actions'}, button));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const s = {key: key.value.trim(), tenant: tenant.value.trim()};
    const fail = (text) => {
      error.textContent = text;
      error.hidden = false;
      button.disabled = false;
      key.focus();
      key.select();
    };
    if (!s.key) return fail('Enter an API key.');
    button.disabled = true;
    error.hidden = true;
    try {
      await call('conversations', {params: {limit: 1}, session: s});
    } catch (e) {
      return fail('Sign-in failed: ' + e.message);
    }
    key.value = '';
    saveSession(s);
    done();
  });
  main.append(form);
  key.focus();
}
