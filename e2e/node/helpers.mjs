// Shared setup of the suite: where Recall and the fake upstream run (set by
// e2e/node_test.go), SDK clients, what the upstream last received and what
// Recall stored.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

export const recallURL = mustEnv('RECALL_BASE_URL'); // http://127.0.0.1:port, upstream protocol openai
// The Recall whose upstream speaks Anthropic's Messages: every protocol is
// translated to Messages on the way out.
export const recallAnthropicURL = mustEnv('RECALL_ANTHROPIC_BASE_URL');
// The Recall whose upstream speaks only chat completions: Responses are
// translated to chat, their state served by Recall all the same.
export const recallChatURL = mustEnv('RECALL_CHAT_BASE_URL');
// The Recall whose upstream speaks Gemini: every protocol is translated
// to generateContent on the way out.
export const recallGeminiURL = mustEnv('RECALL_GEMINI_BASE_URL');
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

// anthropic returns an official Anthropic SDK client on a Recall (the SDK
// appends /v1/messages to baseURL), naming conversation conv by header, or
// none if conv is undefined.
export function anthropic(conv, baseURL = recallURL) {
  return new Anthropic({
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

// lastUpstream returns the last request the fake upstream received at path
// (/v1/chat/completions, /v1/responses or /v1/messages): {model, stream,
// messages, body, headers}, messages being the chat messages, the Responses
// input items or the Anthropic messages.
export async function lastUpstream(path = '/v1/chat/completions') {
  const r = await fetch(`${fakeURL}/_fake/last?path=${encodeURIComponent(path)}`);
  if (!r.ok) {
    throw new Error(`GET /_fake/last?path=${path}: ${r.status} ${await r.text()}`);
  }
  return r.json();
}

// stored returns the messages Recall stored for conversation conv, each as
// the exact JSON it arrived with, in order.
export async function stored(conv, base = recallURL) {
  const r = await fetch(`${base}/recall/v1/conversations/${encodeURIComponent(conv)}/messages?limit=100`, {
    headers: { Authorization: `Bearer ${apiKey}` },
  });
  if (!r.ok) {
    throw new Error(`GET /recall/v1/conversations/${conv}/messages: ${r.status} ${await r.text()}`);
  }
  return (await r.json()).data.map((m) => m.message);
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


// said renders messages of any of the three protocols (chat messages,
// Responses items, Anthropic messages) as "role:text", a tool call as
// "call <id> <name> <arguments>" and a tool result as "result <id>:<output>",
// the parts of one message joined by " | ", for comparisons that hold
// whatever protocol the upstream spoke.
export function said(messages) {
  return messages.map((m) => {
    switch (m.type) {
      case 'function_call':
        return `call ${m.call_id} ${m.name} ${m.arguments}`;
      case 'function_call_output':
        return `result ${m.call_id}:${text(m.output)}`;
      case 'reasoning':
        return 'reasoning';
    }
    if (m.role === 'tool') return `result ${m.tool_call_id}:${text(m.content)}`;
    const parts = [];
    if (m.content != null && m.content !== '' && !(Array.isArray(m.content) && m.content.length === 0)) {
      if (typeof m.content === 'string') parts.push(m.content);
      else {
        for (const p of m.content) {
          if (p.type === 'tool_use') parts.push(`call ${p.id} ${p.name} ${JSON.stringify(p.input)}`);
          else if (p.type === 'tool_result') parts.push(`result ${p.tool_use_id}:${text(p.content)}`);
          else parts.push(p.text ?? `[${p.type}]`);
        }
      }
    }
    for (const c of m.tool_calls ?? []) parts.push(`call ${c.id} ${c.function.name} ${c.function.arguments}`);
    return `${m.role}:${parts.join(' | ')}`;
  });
}

// text is the text of a string or of content parts.
function text(c) {
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => p.text ?? `[${p.type}]`).join('');
  return JSON.stringify(c ?? null);
}
