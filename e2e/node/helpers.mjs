// Shared setup of the suite: where Recall and the fake upstream run (set by
// e2e/node_test.go), an SDK client, and what the upstream last received.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';

export const recallURL = mustEnv('RECALL_BASE_URL'); // http://127.0.0.1:port
export const fakeURL = mustEnv('FAKE_UPSTREAM_URL'); // http://127.0.0.1:port, with /_fake/ control

function mustEnv(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run this suite through go test ./e2e/`);
  }
  return v;
}

// The key the client presents: Recall runs without tenant files, so it
// passes the key through, and the fake upstream accepts any.
export const apiKey = 'sk-e2e-node';

// client returns an official SDK client on Recall, naming conversation conv
// by header, or none if conv is undefined.
export function client(conv, baseURL = `${recallURL}/v1`) {
  return new OpenAI({
    baseURL,
    apiKey,
    maxRetries: 0,
    defaultHeaders: conv === undefined ? {} : { 'X-Conversation-ID': conv },
  });
}

// newConv returns a conversation id no other test uses.
export function newConv(prefix) {
  return `${prefix}-${randomUUID()}`;
}

// lastUpstream returns the last chat-completions request the fake upstream
// received: {model, stream, messages}.
export async function lastUpstream() {
  const r = await fetch(`${fakeURL}/_fake/last`);
  if (!r.ok) {
    throw new Error(`GET /_fake/last: ${r.status} ${await r.text()}`);
  }
  return r.json();
}

// scriptReply makes the fake upstream answer the next chat completion with
// reply (an upstreamtest.Reply: {content}, {toolCalls: [{name, arguments}]}).
// The suite runs its tests one at a time, so the next one is the test's own.
export async function scriptReply(reply) {
  const r = await fetch(`${fakeURL}/_fake/reply`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(reply),
  });
  if (r.status !== 204) {
    throw new Error(`POST /_fake/reply: ${r.status} ${await r.text()}`);
  }
}

// brief renders messages as "role:content" (or the ids of tool calls and
// the call a tool result answers) for comparisons.
export function brief(messages) {
  return messages.map((m) => {
    let s = m.role;
    if (m.tool_call_id) s += `(${m.tool_call_id})`;
    s += `:${typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? null)}`;
    if (m.tool_calls?.length) s += ` calls=${m.tool_calls.map((c) => `${c.id}/${c.function.name}`).join(',')}`;
    return s;
  });
}

