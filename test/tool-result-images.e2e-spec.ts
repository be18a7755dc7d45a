import { AnthropicLlmAdapter } from '../src/harness/llm/anthropic-llm-adapter';
import type { ChatRequest } from '../src/harness/llm/chat-request';
import type { HttpLlmAdapter } from '../src/harness/llm/http-llm-adapter';
import { OpenAiLlmAdapter } from '../src/harness/llm/openai-llm-adapter';
import { ResponsesLlmAdapter } from '../src/harness/llm/responses-llm-adapter';
import { ScriptedLlmAdapter } from '../src/harness/llm/scripted-llm-adapter';
import { collectStream } from '../src/harness/llm/testing/collect-stream';
import { CLEAR_PIXEL_GIF, IMAGE_ROUND, RED_PIXEL_PNG, toolCall } from '../src/harness/llm/testing/tool-image-round';
import type { Tool } from '../src/harness/tool/tool';
import { toolOutput, type ToolOutput } from '../src/harness/tool/tool-output';
import { FakeProvider, WIRE_PATHS, type WireFormat } from './support/fake-provider';
import { createSession, startRun, startTestHarness, waitUntil, type TestHarness } from './support/test-harness';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A round of three results: an image, none, two images. */
const THREE_RESULTS: ChatRequest = {
  sessionId: 1,
  messages: [
    { role: 'user', content: 'look at both pages' },
    { role: 'assistant', content: null, tool_calls: [toolCall('call_a', 'screenshot'), toolCall('call_b', 'glob'), toolCall('call_c', 'screenshot')] },
    { role: 'tool', tool_call_id: 'call_a', name: 'screenshot', content: 'page a', images: [RED_PIXEL_PNG] },
    { role: 'tool', tool_call_id: 'call_b', name: 'glob', content: '[]' },
    { role: 'tool', tool_call_id: 'call_c', name: 'screenshot', content: 'page c', images: [CLEAR_PIXEL_GIF, RED_PIXEL_PNG] },
  ],
};

const ADAPTERS: Array<{ wire: WireFormat; adapter: HttpLlmAdapter; tiesImagesToCalls: boolean }> = [
  { wire: 'openai', adapter: new OpenAiLlmAdapter({ baseDelayMs: 1 }), tiesImagesToCalls: false },
  { wire: 'anthropic', adapter: new AnthropicLlmAdapter({ baseDelayMs: 1 }), tiesImagesToCalls: true },
  { wire: 'responses', adapter: new ResponsesLlmAdapter({ baseDelayMs: 1 }), tiesImagesToCalls: true },
];

describe.each(ADAPTERS)('tool-result images over LLM_PROTOCOL=$wire', ({ wire, adapter, tiesImagesToCalls }) => {
  let provider: FakeProvider;

  beforeEach(async () => {
    provider = await FakeProvider.start(wire);
  });

  afterEach(async () => {
    await provider.close();
  });

  const config = () => ({ protocol: wire, baseUrl: provider.url, apiKey: 'sk-fake', model: 'fake-model' });

  it('reach the provider as images it takes, decoded to the bytes the tool returned', async () => {
    provider.script({ content: 'A red pixel.' });
    const answer = await collectStream(adapter.stream(IMAGE_ROUND, config()));
    expect(answer.content).toBe('A red pixel.');

    const [request] = provider.requests;
    expect(request.images).toEqual([
      { mediaType: 'image/png', data: RED_PIXEL_PNG.data, bytes: expect.any(Buffer), ...(tiesImagesToCalls ? { toolCallId: 'call_shot' } : {}) },
    ]);
    expect(request.images[0].bytes.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(request.images[0].bytes).toHaveLength(70);
  });

  it('keep their order and their calls in a round of several results', async () => {
    provider.script({ content: 'Seen.' });
    await collectStream(adapter.stream(THREE_RESULTS, config()));
    const images = provider.requests[0].images.map((image) => [image.mediaType, image.toolCallId]);
    const calls = tiesImagesToCalls ? ['call_a', 'call_c', 'call_c'] : [undefined, undefined, undefined];
    expect(images).toEqual([
      ['image/png', calls[0]],
      ['image/gif', calls[1]],
      ['image/png', calls[2]],
    ]);
  });
});

/** A tool that answers a caption and a PNG, as a screenshot tool would. */
const SCREENSHOT: Tool = {
  getName: () => 'screenshot',
  getDescription: () => 'Captures the page.',
  getInputSchema: () => ({ type: 'object', properties: {} }),
  getOutputSchema: () => null,
  execute: (): ToolOutput =>
    toolOutput([
      { type: 'text', text: 'Captured the page.' },
      { type: 'image', mediaType: 'image/png', data: Buffer.from(RED_PIXEL_PNG.data, 'base64') },
    ]),
};

describe.each(ADAPTERS)('a whole server over LLM_PROTOCOL=$wire', ({ wire, tiesImagesToCalls }) => {
  let t: TestHarness<FakeProvider>;

  beforeEach(async () => {
    t = await startTestHarness({ provider: wire, tools: [SCREENSHOT] });
  });

  afterEach(async () => {
    await t.close();
  });

  it('shows the model the image a tool returned, in the next request only as an image', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    t.provider.script(
      { toolCalls: [{ id: 'call_glob', name: 'glob', arguments: { pattern: '*' } }, { id: 'call_shot', name: 'screenshot', arguments: {} }] },
      { content: 'A red pixel.' },
    );
    await startRun(t.userA, session.id, 'Look at the page.');
    const second = await t.provider.waitForRequest(2);

    // Taken, not refused with a 400: the provider's rules for where images go held.
    expect(t.provider.pendingRounds()).toBe(0);
    expect(t.provider.requests[0].images).toEqual([]);
    expect(second.images).toEqual([
      { mediaType: 'image/png', data: RED_PIXEL_PNG.data, bytes: expect.any(Buffer), ...(tiesImagesToCalls ? { toolCallId: 'call_shot' } : {}) },
    ]);
    // The base64 is in the body once: in the image, never in a text.
    expect(JSON.stringify(second.body).split(RED_PIXEL_PNG.data)).toHaveLength(2);
  });
});

describe('the fake providers refuse images where their providers take none', () => {
  let provider: FakeProvider;

  afterEach(async () => {
    await provider.close();
  });

  /** Posts a body as is to the fake's path; answers the status and the error message. */
  async function post(wire: WireFormat, body: Record<string, unknown>): Promise<{ status: number; message: string }> {
    provider = await FakeProvider.start(wire);
    provider.script({ content: 'taken' });
    const response = await fetch(`${provider.url.replace(/\/v1$/, '')}${WIRE_PATHS[wire]}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const message = response.status === 200 ? '' : String((JSON.parse(text) as { error: { message: string } }).error.message);
    return { status: response.status, message };
  }

  const assistantCall = { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'shot', arguments: '{}' } }] };
  const anthropicCall = { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'shot', input: {} }] };
  const png = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: RED_PIXEL_PNG.data } };

  it('Chat Completions: an image in a tool message', async () => {
    const answer = await post('openai', {
      model: 'fake-model',
      messages: [
        { role: 'user', content: 'look' },
        assistantCall,
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${RED_PIXEL_PNG.data}` } }] },
      ],
    });
    expect(answer).toEqual({ status: 400, message: expect.stringContaining("Image URLs are only allowed for messages with role 'user'") });
  });

  it('Chat Completions: an image URL that is not base64 image data', async () => {
    const answer = await post('openai', {
      model: 'fake-model',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:text/plain;base64,aGk=' } }] }],
    });
    expect(answer).toEqual({ status: 400, message: expect.stringContaining('Expected a base64-encoded data URL with an image MIME type') });
  });

  it('Messages: an image in an error tool_result', async () => {
    const answer = await post('anthropic', {
      model: 'fake-model',
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'look' },
        anthropicCall,
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', is_error: true, content: [{ type: 'text', text: 'failed' }, png] }] },
      ],
    });
    expect(answer).toEqual({ status: 400, message: "messages.2.content.0.tool_result: all content must be type 'text' if 'is_error' is true" });
  });

  it('Messages: an image of a type the API does not read', async () => {
    const svg = { type: 'image', source: { type: 'base64', media_type: 'image/svg+xml', data: 'PHN2Zy8+' } };
    const answer = await post('anthropic', {
      model: 'fake-model',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'look' }, anthropicCall, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [svg] }] }],
    });
    expect(answer).toEqual({
      status: 400,
      message: "messages.2.content.0.tool_result.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
    });
  });

  it('takes the same images where they belong', async () => {
    const answer = await post('anthropic', {
      model: 'fake-model',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'look' }, anthropicCall, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [png] }] }],
    });
    expect(answer).toEqual({ status: 200, message: '' });
    expect(provider.requests[0].images.map((image) => image.toolCallId)).toEqual(['toolu_1']);
  });
});

describe('the scripted model of a whole server', () => {
  let t: TestHarness;

  beforeEach(async () => {
    const scenario = { rounds: [{ toolCalls: [{ id: 'call_shot', name: 'screenshot' }] }, { content: 'Seen.' }] };
    t = await startTestHarness({ tools: [SCREENSHOT], env: { LLM_PROTOCOL: 'scripted', LLM_SCRIPT: JSON.stringify(scenario) } });
  });

  afterEach(async () => {
    await t.close();
  });

  it('tells a test what each session sent it, the images of tool results included', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const model = t.harness.app.get(ScriptedLlmAdapter);
    await startRun(t.userA, session.id, 'What do you see?');
    await waitUntil(() => model.received(session.id).length === 2, 'the scripted model was asked twice');

    const [first, second] = model.received(session.id);
    expect(first.messages.filter((message) => message.role !== 'system').map((message) => message.content)).toEqual(['What do you see?']);
    const result = second.messages.find((message) => message.role === 'tool');
    expect(result).toMatchObject({ tool_call_id: 'call_shot', images: [RED_PIXEL_PNG] });
    expect(t.provider.requests).toEqual([]);
  });
});
