// A tool round trip with parallel calls: the assistant's calls come back
// streamed, the client sends only the two results, and the upstream (as
// strict as OpenAI about tool messages) gets the call message before them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, newConv, lastUpstream, scriptReply, brief } from './helpers.mjs';

const tools = ['get_weather', 'get_time'].map((name) => ({
  type: 'function',
  function: {
    name,
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}));

for (const streamed of [true, false]) {
  test(`tool round trip with parallel calls, ${streamed ? 'streamed' : 'not streamed'}`, async () => {
    const conv = newConv('tools');
    const c = client(conv);
    await scriptReply({
      toolCalls: [
        { name: 'get_weather', arguments: '{"city":"Paris"}' },
        { name: 'get_time', arguments: '{"city":"Paris"}' },
      ],
    });
    const ask = { model: 'gpt-4o-mini', tools, parallel_tool_calls: true, messages: [{ role: 'user', content: 'Weather and time in Paris?' }] };
    const first = streamed
      ? await c.chat.completions.stream(ask).finalChatCompletion()
      : await c.chat.completions.create(ask);
    const msg = first.choices[0].message;
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(msg.tool_calls.map((t) => t.function.name), ['get_weather', 'get_time']);
    assert.deepEqual(msg.tool_calls.map((t) => JSON.parse(t.function.arguments)), [{ city: 'Paris' }, { city: 'Paris' }]);

    const [weather, time] = msg.tool_calls;
    const second = await c.chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      messages: [
        { role: 'tool', tool_call_id: weather.id, content: '18°C, clear' },
        { role: 'tool', tool_call_id: time.id, content: '14:05' },
      ],
    });
    assert.equal(second.choices[0].finish_reason, 'stop');
    const up = await lastUpstream();
    assert.deepEqual(brief(up.messages), [
      'user:Weather and time in Paris?',
      `assistant:null calls=${weather.id}/get_weather,${time.id}/get_time`,
      `tool(${weather.id}):18°C, clear`,
      `tool(${time.id}):14:05`,
    ]);
  });
}
