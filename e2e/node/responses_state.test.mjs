// The Responses API's state, served by Recall, through openai-node: chaining
// by previous_response_id with no conversation header, stored responses
// (retrieve, inputItems.list, delete) and the Conversations API
// (conversations.create/retrieve/update/delete, conversations.items
// create/list/retrieve/delete); over an upstream that speaks Responses and
// over one that speaks only chat completions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { client, lastUpstream, said, recallURL, recallChatURL } from './helpers.mjs';

const model = 'gpt-4.1';

const recalls = [
  { name: 'responses upstream', base: recallURL, path: '/v1/responses' },
  { name: 'chat upstream', base: recallChatURL, path: '/v1/chat/completions' },
];

// notFound asserts that p rejects with the SDK's 404.
async function notFound(p, what) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError, `${what}: got ${e}, want a 404`);
    return true;
  });
}

// conversed is what the upstream got, its system messages aside.
const conversed = (up) => said(up.messages).filter((m) => !m.startsWith('system:') && !m.startsWith('developer:'));

for (const { name, base, path } of recalls) {
  test(`chaining by previous_response_id, no conversation header (${name})`, async () => {
    const c = client(undefined, `${base}/v1`);
    const r1 = await c.responses.create({ model, input: 'My name is Ada.' });
    assert.match(r1.id, /^resp_/);
    assert.ok(r1.conversation?.id, `the first response names the conversation Recall recorded it in: ${JSON.stringify(r1)}`);
    const r2 = await c.responses.create({ model, input: 'I live in Paris.', previous_response_id: r1.id });
    assert.equal(r2.previous_response_id, r1.id);
    assert.equal(r2.conversation?.id, r1.conversation.id, 'the chain stays in one conversation');
    const r3 = await c.responses.stream({ model, input: 'What do you know?', previous_response_id: r2.id }).finalResponse();
    assert.equal(r3.output_text, 'echo: What do you know?');

    const up = await lastUpstream(path);
    assert.deepEqual(conversed(up), [
      'user:My name is Ada.', 'assistant:echo: My name is Ada.',
      'user:I live in Paris.', 'assistant:echo: I live in Paris.',
      'user:What do you know?',
    ], 'the third upstream call carries the whole chain');
    if (path === '/v1/responses') {
      assert.equal(up.body.store, false, 'the upstream is asked to keep nothing');
      assert.equal(up.body.previous_response_id, undefined, 'previous_response_id is never forwarded');
    }
  });

  test(`responses.retrieve, inputItems.list and delete (${name})`, async () => {
    const c = client(undefined, `${base}/v1`);
    const r1 = await c.responses.create({ model, input: 'The password is zebra.' });
    const r2 = await c.responses.create({
      model,
      previous_response_id: r1.id,
      input: [{ role: 'user', content: 'first' }, { role: 'user', content: 'second' }],
    });

    const got = await c.responses.retrieve(r2.id);
    assert.equal(got.id, r2.id);
    assert.equal(got.status, 'completed');
    assert.equal(got.output_text, 'echo: second', 'the stored response as it was returned');
    assert.deepEqual(got.output.map((it) => it.id), r2.output.map((it) => it.id), 'with the same item ids');

    const texts = [];
    for await (const it of c.responses.inputItems.list(r2.id, { order: 'asc', limit: 1 })) {
      texts.push(it.content.map((p) => p.text).join(''));
    }
    assert.deepEqual(texts, ['first', 'second'], 'the items r2 added, paged one at a time by the SDK');

    await c.responses.delete(r1.id);
    await notFound(c.responses.retrieve(r1.id), 'the deleted response');
    await notFound(c.responses.delete(r1.id), 'deleted twice');
    await c.responses.create({ model, input: 'And now?', previous_response_id: r2.id });
    const sent = conversed(await lastUpstream(path));
    assert.ok(!sent.some((m) => m.includes('zebra')), `the deleted turn never reaches the upstream again: ${JSON.stringify(sent)}`);
    assert.deepEqual(sent, ['user:first', 'user:second', 'assistant:echo: second', 'user:And now?']);
  });

  test(`the Conversations API and its items (${name})`, async () => {
    const c = client(undefined, `${base}/v1`);
    const conv = await c.conversations.create({
      items: [
        { type: 'message', role: 'user', content: 'My name is Ada.' },
        { type: 'message', role: 'assistant', content: 'Hello Ada.' },
      ],
      metadata: { topic: 'names' },
    });
    assert.match(conv.id, /^conv_/);
    assert.equal(conv.object, 'conversation');
    assert.deepEqual(conv.metadata, { topic: 'names' });

    assert.deepEqual((await c.conversations.retrieve(conv.id)).metadata, { topic: 'names' });
    const updated = await c.conversations.update(conv.id, { metadata: { topic: 'greetings' } });
    assert.deepEqual(updated.metadata, { topic: 'greetings' });
    assert.deepEqual((await c.conversations.retrieve(conv.id)).metadata, { topic: 'greetings' });

    const added = await c.conversations.items.create(conv.id, {
      items: [{ type: 'message', role: 'user', content: 'I live in London.' }],
    });
    assert.equal(added.data.length, 1);
    const londonID = added.data[0].id;

    const items = [];
    for await (const it of c.conversations.items.list(conv.id, { order: 'asc' })) items.push(it);
    assert.deepEqual(items.map((it) => `${it.role}:${it.content.map((p) => p.text).join('')}`),
      ['user:My name is Ada.', 'assistant:Hello Ada.', 'user:I live in London.']);
    assert.equal(items[2].id, londonID);

    const one = await c.conversations.items.retrieve(items[1].id, { conversation_id: conv.id });
    assert.equal(one.id, items[1].id);
    assert.equal(one.content.map((p) => p.text).join(''), 'Hello Ada.');

    const r = await c.responses.create({ model, conversation: conv.id, input: 'What is my name?' });
    assert.equal(r.conversation?.id, conv.id);
    assert.deepEqual(conversed(await lastUpstream(path)),
      ['user:My name is Ada.', 'assistant:Hello Ada.', 'user:I live in London.', 'user:What is my name?']);

    await c.conversations.items.delete(londonID, { conversation_id: conv.id });
    await notFound(c.conversations.items.retrieve(londonID, { conversation_id: conv.id }), 'the deleted item');
    await c.responses.create({ model, conversation: conv.id, input: 'Where do I live?' });
    const sent = conversed(await lastUpstream(path));
    assert.ok(!sent.some((m) => m.includes('London')), `the deleted item never reaches the upstream again: ${JSON.stringify(sent)}`);

    const deleted = await c.conversations.delete(conv.id);
    assert.deepEqual([deleted.id, deleted.object, deleted.deleted], [conv.id, 'conversation.deleted', true]);
    await notFound(c.conversations.retrieve(conv.id), 'the deleted conversation');
    await notFound(c.conversations.items.list(conv.id), 'the deleted conversation\'s items');
  });
}
