// The OpenAI SDK's Responses API on Recall: a conversation named by header
// remembers over an upstream that keeps no state (each call sends only its
// new input; the upstream gets the whole history with store false), the
// streaming helper's finalResponse(), and a function-tool round trip; over
// an upstream that speaks Responses and over one that speaks Messages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, newConv, lastUpstream, scriptReply, stored, said, recallURL, recallAnthropicURL } from './helpers.mjs';

const model = 'gpt-4.1';

// Over both Recalls: the default forwards Responses as Responses, the
// other translates them to Anthropic's Messages.
const recalls = [
  { name: 'responses upstream', base: recallURL, path: '/v1/responses' },
  { name: 'anthropic upstream', base: recallAnthropicURL, path: '/v1/messages' },
];

for (const { name, base, path } of recalls) {
  test(`two turns by header, the second streamed (${name})`, async () => {
    const conv = newConv('responses');
    const c = client(conv, `${base}/v1`);
    const { data: first, response } = await c.responses.create({ model, input: 'My name is Ada.' }).withResponse();
    assert.equal(first.output_text, 'echo: My name is Ada.');
    assert.equal(first.status, 'completed');
    assert.match(first.id, /^resp_/);
    assert.equal(response.headers.get('x-recall-conversation'), conv);

    const stream = c.responses.stream({ model, input: 'What is my name?' });
    const deltas = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const second = await stream.finalResponse();
    assert.equal(second.output_text, 'echo: What is my name?');
    assert.equal(deltas.join(''), 'echo: What is my name?', 'the text deltas add up to the answer');
    assert.ok(second.usage && second.usage.input_tokens > 0, `usage: got ${JSON.stringify(second.usage)}`);

    const up = await lastUpstream(path);
    assert.equal(up.stream, true);
    assert.deepEqual(said(up.messages), ['user:My name is Ada.', 'assistant:echo: My name is Ada.', 'user:What is my name?']);
    if (path === '/v1/responses') {
      assert.equal(up.body.store, false, 'the upstream is asked to keep nothing');
      assert.equal(up.body.previous_response_id, undefined);
      assert.equal(up.body.conversation, undefined);
    }
    assert.deepEqual(said(await stored(conv, base)), [
      'user:My name is Ada.', 'assistant:echo: My name is Ada.', 'user:What is my name?', 'assistant:echo: What is my name?',
    ]);
  });
}

const tools = [{
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
}];

for (const { name, base, path } of recalls) {
  for (const streamed of [false, true]) {
    test(`function tool round trip, ${streamed ? 'streamed' : 'not streamed'} (${name})`, async () => {
      const conv = newConv('responses-tool');
      const c = client(conv, `${base}/v1`);
      await scriptReply({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] });
      const ask = { model, tools, input: 'Weather in Paris?' };
      const first = streamed ? await c.responses.stream(ask).finalResponse() : await c.responses.create(ask);
      const calls = first.output.filter((it) => it.type === 'function_call');
      assert.equal(calls.length, 1, `output: ${JSON.stringify(first.output)}`);
      const [call] = calls;
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
      assert.match(call.id, /^fc_/);

      const second = await c.responses.create({
        model,
        tools,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '18°C, clear' }],
      });
      assert.equal(second.output_text, 'echo: Weather in Paris?');
      const up = await lastUpstream(path);
      const id = call.call_id;
      assert.deepEqual(said(up.messages), path === '/v1/responses'
        ? ['user:Weather in Paris?', `call ${id} get_weather {"city":"Paris"}`, `result ${id}:18°C, clear`]
        : ['user:Weather in Paris?', `assistant:call ${id} get_weather {"city":"Paris"}`, `user:result ${id}:18°C, clear`]);
      assert.equal(up.body.tools[0].name, 'get_weather');
      // A stored message keeps the protocol its client sent or received
      // it in: here every one is a Responses item.
      assert.deepEqual(said(await stored(conv, base)), [
        'user:Weather in Paris?',
        `call ${id} get_weather {"city":"Paris"}`,
        `result ${id}:18°C, clear`,
        'assistant:echo: Weather in Paris?',
      ]);
    });
  }
}
