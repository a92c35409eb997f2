// The conversation API, called with the key the user signed in with. The
// key lives in this tab's sessionStorage only: never in localStorage, a
// cookie or the address, and it is never shown.

const KEY = 'recall.key';
const TENANT = 'recall.tenant';

// ApiError is an answer other than 2xx, with the API's own message.
export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code || '';
  }
}

// session returns {key, tenant} or null when signed out.
export function session() {
  const key = sessionStorage.getItem(KEY);
  return key ? {key, tenant: sessionStorage.getItem(TENANT) || ''} : null;
}

export function saveSession(s) {
  sessionStorage.setItem(KEY, s.key);
  if (s.tenant) sessionStorage.setItem(TENANT, s.tenant);
  else sessionStorage.removeItem(TENANT);
}

export function clearSession() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(TENANT);
}

// call GETs /recall/v1/<path> with params and answers the decoded JSON.
// opts.session overrides the stored session (sign-in tries a key before
// keeping it); opts.signal aborts.
export async function call(path, opts = {}) {
  const s = opts.session || session();
  if (!s) throw new ApiError(401, 'Not signed in.');
  const url = new URL('/recall/v1/' + path, location.origin);
  for (const [k, v] of Object.entries(opts.params || {})) {
    if (v != null && v !== '') url.searchParams.set(k, String(v));
  }
  const headers = {'Authorization': 'Bearer ' + s.key, 'Accept': 'application/json'};
  if (s.tenant) headers['X-Recall-Tenant'] = s.tenant;
  let resp;
  try {
    resp = await fetch(url, {headers, signal: opts.signal, credentials: 'omit', cache: 'no-store'});
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'Recall did not answer (' + e.message + ').');
  }
  let body = null;
  try {
    body = await resp.json();
  } catch {
    body = null;
  }
  if (!resp.ok) {
    const err = body && body.error;
    throw new ApiError(resp.status, (err && err.message) || `Recall answered ${resp.status}.`, err && err.code);
  }
  return body;
}

// seg escapes one path segment.
export const seg = encodeURIComponent;
