// Google's Gen AI SDK (@google/genai) on Recall, over a Recall whose
// upstream speaks Gemini: a chat session (the SDK resends its whole
// history each turn) remembers across requests without doubling,
// streamed and not; a fresh client naming the conversation by path
// prefix is given the turns it never saw; a function call round trip;
// and the key goes upstream in x-goog-api-key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GoogleGenAI } from '@google/genai';
import { apiKey, newConv, lastUpstream, scriptReply, stored, recallGeminiURL } from './helpers.mjs';

const model = 'gemini-2.5-flash';

// genai returns a Gen AI SDK client on Recall (the SDK appends
// /v1beta/models/… to baseUrl), naming conversation conv by header, or
// none if conv is undefined.
function genai(conv, baseUrl = recallGeminiURL) {
  return new GoogleGenAI({
    apiKey,
    httpOptions: { baseUrl, headers: conv === undefined ? {} : { 'X-Conversation-ID': conv } },
  });
}

// roles renders Gemini contents as role:text, a call as call:name and a
// response as response:name.
function roles(contents) {
  return contents.map((c) => `${c.role}:${c.parts.map((p) =>
    p.functionCall ? `call:${p.functionCall.name}` : p.functionResponse ? `response:${p.functionResponse.name}` : p.text).join('+')}`);
}

test('a Gen AI chat session remembers, streamed and not, without doubling what it resends', async () => {
  const conv = newConv('gemini-chat');
  const chat = genai(conv).chats.create({ model, config: { systemInstruction: 'Be brief.' } });
  const first = await chat.sendMessage({ message: 'My name is Ada.' });
  assert.equal(first.text, 'echo: My name is Ada.');

  let streamed = '';
  for await (const chunk of await chat.sendMessageStream({ message: 'What is my name?' })) {
    streamed += chunk.text ?? '';
  }
  assert.equal(streamed, 'echo: What is my name?');

  const up = await lastUpstream(`/v1/models/${model}:streamGenerateContent`);
  assert.deepEqual(roles(up.messages), ['user:My name is Ada.', 'model:echo: My name is Ada.', 'user:What is my name?'],
    'the SDK resent the first turn: Recall sent it once');
  assert.equal(up.headers['x-goog-api-key'], apiKey, 'the key goes on as x-goog-api-key');
  assert.equal(up.body.systemInstruction.parts[0].text, 'Be brief.');
  assert.equal((await stored(conv, recallGeminiURL)).length, 4, 'stored: the two turns, not the system instruction');

  // A client that never saw the conversation names it in the path.
  const fresh = await genai(undefined, `${recallGeminiURL}/c/${conv}`).models.generateContent({ model, contents: 'And again?' });
  assert.equal(fresh.text, 'echo: And again?');
  const again = await lastUpstream(`/v1/models/${model}:generateContent`);
  assert.equal(again.messages.length, 5, 'the two stored turns and the new question');
});

test('a Gen AI function call round trip', async () => {
  const conv = newConv('gemini-tools');
  const c = genai(conv);
  const tools = [{ functionDeclarations: [{ name: 'weather', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } } } }] }];
  await scriptReply({ toolCalls: [{ name: 'weather', arguments: '{"city":"Oslo"}' }] });
  const first = await c.models.generateContent({ model, contents: 'Weather in Oslo?', config: { tools } });
  assert.equal(first.functionCalls?.[0]?.name, 'weather');
  assert.deepEqual(first.functionCalls[0].args, { city: 'Oslo' });

  await scriptReply({ content: 'Sunny in Oslo.' });
  const second = await c.models.generateContent({
    model,
    contents: [{ role: 'user', parts: [{ functionResponse: { name: 'weather', response: { output: 'sunny' } } }] }],
    config: { tools },
  });
  assert.equal(second.text, 'Sunny in Oslo.');
  const up = await lastUpstream(`/v1/models/${model}:generateContent`);
  assert.deepEqual(roles(up.messages), ['user:Weather in Oslo?', 'model:call:weather', 'user:response:weather']);
});
