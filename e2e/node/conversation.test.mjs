// A conversation of three turns named by header: each call sends only its
// new message, and the upstream sees the whole conversation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, newConv, lastUpstream, brief } from './helpers.mjs';

const turns = ['My name is Ada.', 'I live in London.', 'What is my name?'];

// Every turn the upstream received before the current one, as the fake
// upstream answers: "echo: " and the last user message.
function expectedUpstream(n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(`user:${turns[i]}`, `assistant:echo: ${turns[i]}`);
  out.push(`user:${turns[n]}`);
  return out;
}

test('three turns by header, not streamed', async () => {
  const conv = newConv('header');
  const c = client(conv);
  for (let i = 0; i < turns.length; i++) {
    const { data, response } = await c.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: turns[i] }] })
      .withResponse();
    assert.equal(data.choices[0].message.content, `echo: ${turns[i]}`);
    assert.equal(response.headers.get('x-recall-conversation'), conv);
    assert.equal(response.headers.get('x-recall-history'), `${i + 1}/${i + 1}`, `turn ${i + 1}: included/stored turns, this one too`);
    const up = await lastUpstream();
    assert.deepEqual(brief(up.messages), expectedUpstream(i), `turn ${i + 1}: what the upstream received`);
  }
});

test('three turns by header, streamed', async () => {
  const conv = newConv('header-stream');
  const c = client(conv);
  for (let i = 0; i < turns.length; i++) {
    const stream = await c.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: turns[i] }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish = null;
    let usage = null;
    for await (const chunk of stream) {
      if (chunk.choices.length > 0) {
        text += chunk.choices[0].delta.content ?? '';
        finish = chunk.choices[0].finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, `echo: ${turns[i]}`);
    assert.equal(finish, 'stop');
    assert.ok(usage && usage.prompt_tokens > 0, 'the final usage chunk is relayed');
    const up = await lastUpstream();
    assert.equal(up.stream, true);
    assert.deepEqual(brief(up.messages), expectedUpstream(i), `turn ${i + 1}: what the upstream received`);
  }
});

test('a client that resends the whole conversation is not stored twice', async () => {
  const conv = newConv('resend');
  const c = client(conv);
  const messages = [];
  for (let i = 0; i < turns.length; i++) {
    messages.push({ role: 'user', content: turns[i] });
    const r = await c.chat.completions.create({ model: 'gpt-4o-mini', messages });
    messages.push(r.choices[0].message);
  }
  const up = await lastUpstream();
  assert.deepEqual(brief(up.messages), expectedUpstream(turns.length - 1));
});
