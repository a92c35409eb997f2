// The Vercel AI SDK on Recall: generateText then streamText, each sending
// only its new prompt with the conversation in the provider's headers, and
// the second answer built on the first; and a tool loop (the SDK runs the
// tool and calls again with the whole conversation) through each provider
// whose protocol the upstream speaks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, streamText, tool, stepCountIs } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { z } from 'zod';
import { apiKey, newConv, lastUpstream, scriptReply, stored, said, recallURL, recallAnthropicURL } from './helpers.mjs';

// Each provider on a Recall, and the path its upstream call goes to.
const providers = [
  {
    name: 'openai.responses',
    base: recallURL, path: '/v1/responses',
    model: (headers) => createOpenAI({ baseURL: `${recallURL}/v1`, apiKey, headers }).responses('gpt-4.1'),
  },
  {
    name: 'openai.chat',
    base: recallURL, path: '/v1/chat/completions',
    model: (headers) => createOpenAI({ baseURL: `${recallURL}/v1`, apiKey, headers }).chat('gpt-4o-mini'),
  },
  {
    name: 'anthropic over a chat upstream',
    base: recallURL, path: '/v1/chat/completions', translated: true,
    model: (headers) => createAnthropic({ baseURL: `${recallURL}/v1`, apiKey, headers })('claude-sonnet-4-6'),
  },
  {
    name: 'anthropic over an anthropic upstream',
    base: recallAnthropicURL, path: '/v1/messages',
    model: (headers) => createAnthropic({ baseURL: `${recallAnthropicURL}/v1`, apiKey, headers })('claude-sonnet-4-6'),
  },
];

for (const { name, base, path, model } of providers) {
  test(`generateText then streamText remember (${name})`, async () => {
    const conv = newConv('aisdk');
    const m = model({ 'X-Conversation-ID': conv });
    const first = await generateText({ model: m, prompt: 'My name is Ada.', maxRetries: 0 });
    assert.equal(first.text, 'echo: My name is Ada.');
    assert.equal(first.finishReason, 'stop');

    const result = streamText({ model: m, prompt: 'What is my name?', maxRetries: 0, onError: () => {} });
    let streamed = '';
    for await (const delta of result.textStream) streamed += delta;
    assert.equal(streamed, 'echo: What is my name?');
    assert.equal(await result.text, 'echo: What is my name?');
    assert.equal(await result.finishReason, 'stop');
    assert.ok((await result.usage).inputTokens > 0, `usage: got ${JSON.stringify(await result.usage)}`);

    const up = await lastUpstream(path);
    assert.equal(up.stream, true);
    assert.deepEqual(said(up.messages), ['user:My name is Ada.', 'assistant:echo: My name is Ada.', 'user:What is my name?']);
    assert.deepEqual(said(await stored(conv, base)), [
      'user:My name is Ada.', 'assistant:echo: My name is Ada.', 'user:What is my name?', 'assistant:echo: What is my name?',
    ]);
  });
}

// The SDK's tool loop resends the conversation with the call and its
// result: only through providers whose protocol the upstream speaks (a
// resend across protocols is stored twice, see crossprotocol.test.mjs).
for (const { name, base, path, model } of providers.filter((p) => !p.translated)) {
  for (const streamed of [false, true]) {
    test(`a tool loop, ${streamed ? 'streamText' : 'generateText'} (${name})`, async () => {
      const conv = newConv('aisdk-tool');
      const calls = [];
      const tools = {
        get_weather: tool({
          description: 'The weather in a city.',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => { calls.push(city); return `18°C, clear in ${city}`; },
        }),
      };
      await scriptReply({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] });
      const ask = { model: model({ 'X-Conversation-ID': conv }), tools, stopWhen: stepCountIs(3), prompt: 'Weather in Paris?', maxRetries: 0 };
      let text, steps;
      if (streamed) {
        const r = streamText({ ...ask, onError: () => {} });
        text = await r.text;
        steps = await r.steps;
      } else {
        ({ text, steps } = await generateText(ask));
      }
      assert.deepEqual(calls, ['Paris'], 'the tool ran once');
      assert.equal(steps.length, 2);
      assert.equal(text, 'echo: Weather in Paris?');

      const up = await lastUpstream(path);
      const id = steps[0].toolCalls[0].toolCallId;
      const upSaid = said(up.messages);
      assert.equal(upSaid.length, 3, `upstream got ${JSON.stringify(upSaid)}`);
      assert.equal(upSaid[0], 'user:Weather in Paris?');
      assert.match(upSaid[1], new RegExp(`call ${id} get_weather`), 'the call once');
      assert.match(upSaid[2], new RegExp(`result ${id}:.*18°C, clear in Paris`), 'then its result');
      assert.equal(said(await stored(conv, base)).length, 4, 'stored: question, call, result, answer');
    });
  }
}
