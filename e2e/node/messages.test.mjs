// The Anthropic SDK's Messages API on Recall: a conversation named by the
// path prefix (baseURL http://host/c/ID) or by header remembers, streamed
// (stream().finalMessage()) and not, and a tool_use / tool_result round
// trip; over an upstream that speaks chat completions (translated) and over
// one that speaks Messages (native).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { anthropic, apiKey, newConv, lastUpstream, scriptReply, stored, said, recallURL, recallAnthropicURL } from './helpers.mjs';

const model = 'claude-sonnet-4-6';

const recalls = [
  { name: 'chat upstream', base: recallURL, path: '/v1/chat/completions' },
  { name: 'anthropic upstream', base: recallAnthropicURL, path: '/v1/messages' },
];

for (const { name, base, path } of recalls) {
  for (const form of ['prefix', 'header']) {
    test(`two turns by ${form}, the second streamed (${name})`, async () => {
      const conv = newConv(`messages-${form}`);
      const c = form === 'prefix' ? anthropic(undefined, `${base}/c/${conv}`) : anthropic(conv, base);
      const { data: first, response } = await c.messages
        .create({ model, max_tokens: 256, system: 'Be brief.', messages: [{ role: 'user', content: 'My name is Ada.' }] })
        .withResponse();
      assert.equal(first.type, 'message');
      assert.equal(first.role, 'assistant');
      assert.deepEqual(first.content.map((b) => b.text), ['echo: My name is Ada.']);
      assert.equal(first.stop_reason, 'end_turn');
      assert.equal(response.headers.get('x-recall-conversation'), conv);

      const stream = c.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'What is my name?' }] });
      let streamed = '';
      stream.on('text', (t) => { streamed += t; });
      const second = await stream.finalMessage();
      assert.deepEqual(second.content.map((b) => b.text), ['echo: What is my name?']);
      assert.equal(streamed, 'echo: What is my name?', 'the text deltas add up to the answer');
      assert.equal(second.stop_reason, 'end_turn');
      assert.ok(second.usage.input_tokens > 0 && second.usage.output_tokens > 0, `usage: got ${JSON.stringify(second.usage)}`);

      const up = await lastUpstream(path);
      assert.equal(up.stream, true);
      assert.deepEqual(said(up.messages), ['user:My name is Ada.', 'assistant:echo: My name is Ada.', 'user:What is my name?']);
      if (path === '/v1/messages') {
        assert.equal(up.headers['x-api-key'], apiKey, 'the key goes on as x-api-key');
        assert.ok(up.headers['anthropic-version'], 'anthropic-version passes through');
      }
      assert.deepEqual(said(await stored(conv, base)), [
        'user:My name is Ada.', 'assistant:echo: My name is Ada.', 'user:What is my name?', 'assistant:echo: What is my name?',
      ], 'stored: the turns, without the system prompt');
    });
  }
}

const tools = [{
  name: 'get_weather',
  description: 'The weather in a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}];

for (const { name, base, path } of recalls) {
  for (const resend of [false, true]) {
    const title = `tool_use / tool_result round trip, ${resend ? 'streamed, the client resending the conversation' : 'the client sending only the result'} (${name})`;
    test(title, async () => {
      const conv = newConv('messages-tool');
      const c = anthropic(conv, base);
      await scriptReply({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] });
      const ask = { model, max_tokens: 256, tools, messages: [{ role: 'user', content: 'Weather in Paris?' }] };
      const first = resend ? await c.messages.stream(ask).finalMessage() : await c.messages.create(ask);
      assert.equal(first.stop_reason, 'tool_use');
      const uses = first.content.filter((b) => b.type === 'tool_use');
      assert.equal(uses.length, 1, `content: ${JSON.stringify(first.content)}`);
      const [use] = uses;
      assert.equal(use.name, 'get_weather');
      assert.deepEqual(use.input, { city: 'Paris' });

      const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18°C, clear' }] };
      const second = await c.messages.create({
        model,
        max_tokens: 256,
        tools,
        messages: resend ? [...ask.messages, { role: 'assistant', content: first.content }, result] : [result],
      });
      assert.deepEqual(second.content.map((b) => b.text), ['echo: Weather in Paris?']);
      assert.equal(second.stop_reason, 'end_turn');

      const up = await lastUpstream(path);
      const id = use.id;
      assert.deepEqual(said(up.messages), path === '/v1/messages'
        ? ['user:Weather in Paris?', `assistant:call ${id} get_weather {"city":"Paris"}`, `user:result ${id}:18°C, clear`]
        : ['user:Weather in Paris?', `assistant:call ${id} get_weather {"city":"Paris"}`, `result ${id}:18°C, clear`],
      'the call once, then its result');
      assert.equal(said(await stored(conv, base)).length, 4, 'stored: question, call, result, answer');
    });
  }
}
