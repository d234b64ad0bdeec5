import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, testApp, type TestApp } from '../helpers/app.js';
import { shippedWithoutOpenWorldLabel } from '../helpers/closed-world.js';

// Raw request texts: JSON.stringify cannot write a repeated member name.
const omit = '"options":{"omitUnmodifiedResult":true}';
const texts = {
  plain: `{"result":{"content":[{"type":"text","text":"a"}]},${omit}}`,
  inBlock: `{"result":{"content":[{"type":"text","text":"a","text":"b"}]},${omit}}`,
  inMeta: `{"result":{"_meta":{"k":1,"k":2},"content":[{"type":"text","text":"a"}]},${omit}}`,
  resultTwice: `{"result":{"content":[{"type":"text","text":"a"}]},"result":{"content":[{"type":"text","text":"b"}]},${omit}}`,
  inContext: `{"context":{"destination":"local","destination":"local"},"result":{"content":[{"type":"text","text":"a"}]},${omit}}`,
};

describe('options.omitUnmodifiedResult and repeated member names', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({}, shippedWithoutOpenWorldLabel());
  });
  afterAll(() => t.close());

  it('leaves out an unchanged result whose text repeats no member name', async () => {
    const r = await post(t.app, '/v1/evaluate', texts.plain);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ modified: false, resultOmitted: true });
    expect(r.json).not.toHaveProperty('result');
  });

  it.each([
    ['inside a block', texts.inBlock, 'b'],
    ['in the result _meta', texts.inMeta, 'a'],
    ['as the top-level result itself', texts.resultTwice, 'b'],
  ])('sends back, as judged, an unchanged result whose text repeats a member name %s', async (_where, text, judgedText) => {
    const r = await post(t.app, '/v1/evaluate', text);
    expect(r.status).toBe(200);
    expect(r.json.modified).toBe(false);
    expect(r.json).not.toHaveProperty('resultOmitted');
    expect(r.json.result.content[0].text).toBe(judgedText);
  });

  it('still leaves the result out when only another member repeats a name inside it', async () => {
    const r = await post(t.app, '/v1/evaluate', texts.inContext);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ modified: false, resultOmitted: true });
  });
});
