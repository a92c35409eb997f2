// The path-prefix form for agents that can set only a base URL:
// http://host/c/<conversation>/v1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, newConv, recallURL, lastUpstream, brief } from './helpers.mjs';

test('conversation in the base URL path', async () => {
  const conv = newConv('prefix');
  const c = client(undefined, `${recallURL}/c/${conv}/v1`);
  await c.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Remember 42.' }] });
  const { data, response } = await c.chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Which number?' }] })
    .withResponse();
  assert.equal(data.choices[0].message.content, 'echo: Which number?');
  assert.equal(response.headers.get('x-recall-conversation'), conv);
  const up = await lastUpstream();
  assert.deepEqual(brief(up.messages), ['user:Remember 42.', 'assistant:echo: Remember 42.', 'user:Which number?']);
});

test('other endpoints under the prefix pass through', async () => {
  const conv = newConv('prefix-models');
  const ids = [];
  for await (const m of client(undefined, `${recallURL}/c/${conv}/v1`).models.list()) ids.push(m.id);
  assert.ok(ids.includes('gpt-4o'), `got ${ids}`);
});
