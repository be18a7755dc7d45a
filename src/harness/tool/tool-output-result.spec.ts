import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AttachmentStore, NewAttachment, ToolAttachment } from './attachment-store';
import { saveFullOutput } from './full-output-file';
import { textOutput, toolOutput } from './tool-output';
import { budgetResult, DEFAULT_TOOL_OUTPUT_BUDGET, resultFromOutput, type ResultStorage } from './tool-output-result';

class MemoryStore implements AttachmentStore {
  readonly saved: NewAttachment[] = [];
  save(attachment: NewAttachment): ToolAttachment {
    this.saved.push(attachment);
    return { id: `att_${this.saved.length}`, mediaType: attachment.mediaType, bytes: attachment.data.byteLength, ...(attachment.name ? { name: attachment.name } : {}) };
  }
  read(): null {
    return null;
  }
}

const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);

function storage(store: AttachmentStore | null = new MemoryStore(), extra: Partial<ResultStorage> = {}): ResultStorage {
  return { store, sessionId: 7, executionId: 'e1', toolCallId: 'call_1', toolName: 'mcp__demo__snap', ...extra };
}

describe('resultFromOutput', () => {
  it('takes the status from the output, whatever its text looks like', () => {
    expect(resultFromOutput(textOutput('{"error":"this is data"}'), storage(), DEFAULT_TOOL_OUTPUT_BUDGET, 3)).toEqual(
      expect.objectContaining({ status: 'success', content: '{"error":"this is data"}', durationMs: 3 }),
    );
    const failed = resultFromOutput(textOutput('disk full', true), storage(), DEFAULT_TOOL_OUTPUT_BUDGET, 1);
    expect(failed).toEqual(expect.objectContaining({ status: 'error', content: 'disk full', errorMessage: 'disk full' }));
  });

  it('stores an image once, shows it to the model as an image, and describes it in the text', () => {
    const store = new MemoryStore();
    const result = resultFromOutput(
      toolOutput([{ type: 'text', text: 'a screenshot' }, { type: 'image', mediaType: 'image/png', data: PNG, annotations: { priority: 0.5 } }]),
      storage(store),
      DEFAULT_TOOL_OUTPUT_BUDGET,
      0,
    );
    expect(store.saved).toEqual([expect.objectContaining({ sessionId: 7, executionId: 'e1', toolCallId: 'call_1', mediaType: 'image/png', data: PNG })]);
    expect(result.content).toBe('a screenshot\n[image image/png, 7 bytes, attachment att_1]');
    expect(result.images).toEqual([{ mediaType: 'image/png', data: Buffer.from(PNG).toString('base64'), attachmentId: 'att_1' }]);
    expect(result.attachments).toEqual([{ id: 'att_1', mediaType: 'image/png', bytes: 7 }]);
    expect(result.parts?.[1]).toEqual({ type: 'image', mediaType: 'image/png', attachment: { id: 'att_1', mediaType: 'image/png', bytes: 7 }, annotations: { priority: 0.5 } });
    expect(result.content).not.toContain(Buffer.from(PNG).toString('base64'));
  });

  it('refuses images past the byte budget of a call, saying so', () => {
    const store = new MemoryStore();
    const result = resultFromOutput(
      toolOutput([{ type: 'image', mediaType: 'image/png', data: PNG }, { type: 'image', mediaType: 'image/jpeg', data: new Uint8Array(10) }]),
      storage(store),
      { ...DEFAULT_TOOL_OUTPUT_BUDGET, maxImageBytes: 12 },
      0,
    );
    expect(result.images).toHaveLength(1);
    expect(store.saved).toHaveLength(1);
    expect(result.content).toContain('[image image/jpeg, 10 bytes: not shown, over the 12 byte image budget of a call]');
  });

  it('keeps structured content beside the text, embedded blobs as attachments, links as links', () => {
    const store = new MemoryStore();
    const result = resultFromOutput(
      toolOutput(
        [
          { type: 'text', text: '3 rows' },
          { type: 'resource', uri: 'file:///data/report.pdf', mediaType: 'application/pdf', data: new Uint8Array(4) },
          { type: 'resource', uri: 'file:///notes.md', mediaType: 'text/markdown', text: '# notes' },
          { type: 'resource_link', uri: 'https://example.test/rows', name: 'rows' },
        ],
        { structuredContent: { rows: 3, error: null } },
      ),
      storage(store),
      DEFAULT_TOOL_OUTPUT_BUDGET,
      0,
    );
    expect(result.status).toBe('success');
    expect(result.structuredContent).toEqual({ rows: 3, error: null });
    expect(result.content).toBe(
      '3 rows\n[resource file:///data/report.pdf: application/pdf, 4 bytes, attachment att_1]\n[resource file:///notes.md]\n# notes\n[resource link https://example.test/rows (rows)]',
    );
    expect(store.saved[0]).toEqual(expect.objectContaining({ mediaType: 'application/pdf', name: 'report.pdf' }));
  });

  it('keeps a part meant for the user alone out of what the model reads', () => {
    const result = resultFromOutput(
      toolOutput([
        { type: 'text', text: 'for the model' },
        { type: 'text', text: 'for the person', annotations: { audience: ['user'] } },
      ]),
      storage(),
      DEFAULT_TOOL_OUTPUT_BUDGET,
      0,
    );
    expect(result.content).toBe('for the model');
    expect(result.parts).toHaveLength(2);
  });

  it('reads structured content as text when there is no other content', () => {
    const result = resultFromOutput(toolOutput([], { structuredContent: { temperature: 21 } }), storage(), DEFAULT_TOOL_OUTPUT_BUDGET, 0);
    expect(result.content).toBe('{"temperature":21}');
  });
});

describe('budgetResult', () => {
  let workspace: string;
  beforeEach(() => (workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-budget-'))));
  afterEach(() => fs.rmSync(workspace, { recursive: true, force: true }));

  it('gives the model the head, the tail and where the rest is, and keeps the whole text', async () => {
    const store = new MemoryStore();
    const text = `${'h'.repeat(5_000)}${'m'.repeat(100_000)}${'t'.repeat(5_000)}`;
    const result = await budgetResult(
      { callId: 'call_1', status: 'success', content: text },
      storage(store, { saveFullText: (full) => saveFullOutput(workspace, 'call_1', full) }),
      { ...DEFAULT_TOOL_OUTPUT_BUDGET, maxChars: 10_000 },
    );
    expect(result.content.length).toBeLessThan(10_000 + 400);
    expect(result.content.startsWith('h'.repeat(5_000))).toBe(true);
    expect(result.content.endsWith('t'.repeat(2_000))).toBe(true);
    expect(result.content).toContain('of 110000 characters omitted');
    expect(result.content).toContain('.harness/tool-output/call_1.txt');
    expect(result.content).toContain('attachment att_1');
    expect(Buffer.from(store.saved[0].data).toString('utf8')).toBe(text);
    expect(fs.readFileSync(path.join(workspace, '.harness/tool-output/call_1.txt'), 'utf8')).toBe(text);
    expect(result.attachments).toEqual([expect.objectContaining({ id: 'att_1', name: 'mcp__demo__snap-call_1.txt' })]);
  });

  it('holds errors to their own, smaller budget, and leaves short results alone', async () => {
    const budget = { ...DEFAULT_TOOL_OUTPUT_BUDGET, maxChars: 1_000, maxErrorChars: 200 };
    const short = { callId: 'c', status: 'success' as const, content: 'x'.repeat(900) };
    expect(await budgetResult(short, storage(null), budget)).toBe(short);
    const error = await budgetResult({ callId: 'c', status: 'error', content: 'e'.repeat(900) }, storage(null), budget);
    expect(error.content.length).toBeLessThan(900);
    expect(error.content).toContain('longer than the 200 characters');
  });

  it('does not follow a link planted where the full text goes', async () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-outside-'));
    try {
      fs.symlinkSync(outside, path.join(workspace, '.harness'));
      await expect(saveFullOutput(workspace, 'call_1', 'secret')).rejects.toThrow();
      expect(fs.readdirSync(outside)).toEqual([]);
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });
});
