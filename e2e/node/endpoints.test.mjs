// The SDK's other endpoints, passed through untouched with the same
// authentication.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toFile } from 'openai';
import { client } from './helpers.mjs';

test('models.list()', async () => {
  const ids = [];
  for await (const m of client().models.list()) ids.push(m.id);
  assert.ok(ids.includes('gpt-4o'), `got ${ids}`);
});

test('models.retrieve()', async () => {
  const m = await client().models.retrieve('gpt-4o');
  assert.equal(m.id, 'gpt-4o');
  assert.equal(m.object, 'model');
});

test('embeddings.create()', async () => {
  const r = await client().embeddings.create({ model: 'text-embedding-3-small', input: ['hello', 'world'] });
  assert.equal(r.data.length, 2);
  assert.ok(r.data[0].embedding.length > 0);
});

test('a file upload, then delete', async () => {
  const c = client();
  const file = await c.files.create({
    file: await toFile(Buffer.from('{"custom_id":"1"}\n'), 'batch.jsonl'),
    purpose: 'batch',
  });
  assert.match(file.id, /^file-/);
  assert.equal(file.filename, 'batch.jsonl');
  assert.equal(file.bytes, 18);
  const gone = await c.files.delete(file.id);
  assert.deepEqual({ id: gone.id, deleted: gone.deleted }, { id: file.id, deleted: true });
});

test('a request without a key gets OpenAI\'s own 401', async () => {
  const r = await fetch(`${process.env.RECALL_BASE_URL}/v1/models`);
  assert.equal(r.status, 401);
  const body = await r.json();
  assert.match(body.error.message, /^You didn't provide an API key\./);
  assert.equal(body.error.type, 'invalid_request_error');
  assert.equal(body.error.code, null);
});
