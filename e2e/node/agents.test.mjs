// The OpenAI Agents SDK on Recall: an Agent with one function tool, run
// with the SDK's client pointed at Recall and the conversation in its
// headers. The run calls the tool, sends the result back (the SDK resends
// the run's input and items each call) and completes; Recall records the
// conversation once, and a later run remembers it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, Runner, OpenAIProvider, tool, setTracingDisabled, setDefaultOpenAIClient } from '@openai/agents';
import { z } from 'zod';
import { client, newConv, lastUpstream, scriptReply, stored, said, recallURL, recallAnthropicURL, recallChatURL } from './helpers.mjs';

setTracingDisabled(true);

// The SDK's models over Recall: the Responses API and chat completions
// over the default Recall (each reaching an upstream of its protocol), and
// the Responses API translated to an Anthropic upstream.
const setups = [
  { name: 'Responses model', base: recallURL, path: '/v1/responses', useResponses: true },
  { name: 'chat completions model', base: recallURL, path: '/v1/chat/completions', useResponses: false },
  { name: 'Responses model over an anthropic upstream', base: recallAnthropicURL, path: '/v1/messages', useResponses: true },
];

// weatherAgent is an agent with one tool, get_weather, and the cities
// its calls asked about, in order.
function weatherAgent() {
  const cities = [];
  const agent = new Agent({
    name: 'Weather',
    instructions: 'Answer with the weather.',
    model: 'gpt-4.1',
    tools: [tool({
      name: 'get_weather',
      description: 'The weather in a city.',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => { cities.push(city); return `18°C, clear in ${city}`; },
    })],
  });
  return { agent, cities };
}

for (const { name, base, path, useResponses, todo } of setups) {
  test(`an agent with a function tool (${name})`, { todo }, async () => {
    const conv = newConv('agents');
    const openAIClient = client(conv, `${base}/v1`);
    // The default client too, for anything of the SDK that does not go
    // through the runner's provider.
    setDefaultOpenAIClient(openAIClient);
    const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient, useResponses }), tracingDisabled: true });
    const { agent, cities } = weatherAgent();

    await scriptReply({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] });
    const result = await runner.run(agent, 'Weather in Paris?');
    assert.deepEqual(cities, ['Paris'], 'the tool ran once');
    assert.equal(result.finalOutput, 'echo: Weather in Paris?');

    // The agent's instructions go as a system message to a chat upstream.
    const conversed = (up) => said(up.messages).filter((m) => m !== 'system:Answer with the weather.');
    let upSaid = conversed(await lastUpstream(path));
    assert.equal(upSaid.length, 3, `upstream got ${JSON.stringify(upSaid)}`);
    assert.equal(upSaid[0], 'user:Weather in Paris?');
    assert.match(upSaid[1], /call \S+ get_weather \{"city":"Paris"\}$/, 'the call once');
    assert.match(upSaid[2], /^(user:)?result \S+:18°C, clear in Paris$/, 'then its result');
    const conversation = said(await stored(conv, base));
    assert.equal(conversation.length, 4, `stored: question, call, result, answer; got ${JSON.stringify(conversation)}`);
    assert.equal(conversation[3], 'assistant:echo: Weather in Paris?');

    const again = await runner.run(agent, 'Which city did I ask about?');
    assert.equal(again.finalOutput, 'echo: Which city did I ask about?');
    upSaid = conversed(await lastUpstream(path));
    assert.deepEqual([upSaid.length, upSaid[0], upSaid.at(-1)], [5, 'user:Weather in Paris?', 'user:Which city did I ask about?'],
      `the second run's upstream call carries the first: got ${JSON.stringify(upSaid)}`);
  });
}

// A run continued by previousResponseId, with no conversation header: the
// SDK sends only the new input and the id of the last response; Recall,
// which keeps the state, finds the conversation by that id, so the
// upstream (which keeps none) gets the first run's turn with the new
// question. Over an upstream that speaks Responses and over one that
// speaks only chat completions.
const chained = [
  { name: 'responses upstream', base: recallURL, path: '/v1/responses' },
  { name: 'chat upstream', base: recallChatURL, path: '/v1/chat/completions' },
];

for (const { name, base, path } of chained) {
  test(`an agent run continued by previousResponseId (${name})`, async () => {
    const openAIClient = client(undefined, `${base}/v1`);
    const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient, useResponses: true }), tracingDisabled: true });
    const { agent, cities } = weatherAgent();

    await scriptReply({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] });
    const first = await runner.run(agent, 'Weather in Paris?');
    assert.deepEqual(cities, ['Paris'], 'the tool ran once');
    assert.equal(first.finalOutput, 'echo: Weather in Paris?');
    assert.match(first.lastResponseId ?? '', /^resp_/, 'the run ends on a response id of Recall\'s');

    const second = await runner.run(agent, 'Which city did I ask about?', { previousResponseId: first.lastResponseId });
    assert.equal(second.finalOutput, 'echo: Which city did I ask about?');
    const up = await lastUpstream(path);
    assert.equal(up.body.previous_response_id, undefined, 'previous_response_id is never forwarded');
    const sent = said(up.messages).filter((m) => !m.startsWith('system:') && !m.startsWith('developer:'));
    assert.equal(sent[0], 'user:Weather in Paris?', `the first run's question first: ${JSON.stringify(sent)}`);
    assert.ok(sent.some((m) => /call \S+ get_weather \{"city":"Paris"\}$/.test(m)), `the first run's call: ${JSON.stringify(sent)}`);
    assert.ok(sent.some((m) => /result \S+:18°C, clear in Paris$/.test(m)), `its result: ${JSON.stringify(sent)}`);
    assert.equal(sent.at(-2), 'assistant:echo: Weather in Paris?');
    assert.equal(sent.at(-1), 'user:Which city did I ask about?');
    assert.equal(sent.filter((m) => m === 'user:Weather in Paris?').length, 1, `the first run's question once: ${JSON.stringify(sent)}`);

    // The last response names the conversation Recall kept the run in,
    // which holds both runs once each.
    const last = await openAIClient.responses.retrieve(second.lastResponseId);
    const conversation = said(await stored(last.conversation.id, base));
    assert.deepEqual([conversation.length, conversation[0], conversation.at(-1)],
      [6, 'user:Weather in Paris?', 'assistant:echo: Which city did I ask about?'],
      `stored: question, call, result, answer, question, answer; got ${JSON.stringify(conversation)}`);
  });
}
