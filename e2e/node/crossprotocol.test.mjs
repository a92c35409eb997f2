// A client that resends the whole conversation each time (as agents and
// the AI SDK's tool loops do) in another protocol than the upstream's: the
// resent messages must be recognised as stored, not stored and sent again
// (Recall stores an answer as its client received it). The same-protocol
// cases guard the comparison itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, anthropic, newConv, lastUpstream, said, recallURL, recallAnthropicURL } from './helpers.mjs';

const want = ['user:one', 'assistant:echo: one', 'user:two'];

// Each case sends two turns, the second with the whole conversation, and
// names where its upstream call goes.
const cases = [
  {
    name: 'chat completions over a chat upstream',
    base: recallURL, path: '/v1/chat/completions', same: true,
    async turn(conv, messages) {
      const r = await client(conv, `${recallURL}/v1`).chat.completions.create({ model: 'gpt-4o-mini', messages });
      return r.choices[0].message;
    },
  },
  {
    name: 'chat completions over an anthropic upstream',
    base: recallAnthropicURL, path: '/v1/messages', same: false,
    async turn(conv, messages) {
      const r = await client(conv, `${recallAnthropicURL}/v1`).chat.completions.create({ model: 'gpt-4o-mini', messages });
      return r.choices[0].message;
    },
  },
  {
    name: 'messages over an anthropic upstream',
    base: recallAnthropicURL, path: '/v1/messages', same: true,
    async turn(conv, messages) {
      const r = await anthropic(conv, recallAnthropicURL).messages.create({ model: 'claude-sonnet-4-6', max_tokens: 64, messages });
      return { role: 'assistant', content: r.content };
    },
  },
  {
    name: 'messages over a chat upstream',
    base: recallURL, path: '/v1/chat/completions', same: false,
    async turn(conv, messages) {
      const r = await anthropic(conv, recallURL).messages.create({ model: 'claude-sonnet-4-6', max_tokens: 64, messages });
      return { role: 'assistant', content: r.content };
    },
  },
  {
    name: 'responses over a responses upstream',
    base: recallURL, path: '/v1/responses', same: true,
    async turn(conv, messages) {
      const r = await client(conv, `${recallURL}/v1`).responses.create({ model: 'gpt-4.1', input: messages, store: false });
      return r.output[0];
    },
  },
  {
    name: 'responses over an anthropic upstream',
    base: recallAnthropicURL, path: '/v1/messages', same: false,
    async turn(conv, messages) {
      const r = await client(conv, `${recallAnthropicURL}/v1`).responses.create({ model: 'gpt-4.1', input: messages, store: false });
      return r.output[0];
    },
  },
];

for (const { name, path, same, turn } of cases) {
  test(`a resent conversation is not doubled: ${name}`, async () => {
    const conv = newConv('resend');
    const messages = [{ role: 'user', content: 'one' }];
    messages.push(await turn(conv, messages));
    messages.push({ role: 'user', content: 'two' });
    await turn(conv, messages);
    assert.deepEqual(said((await lastUpstream(path)).messages), want);
  });
}
