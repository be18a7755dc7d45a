import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { LlmModelConfig } from '../llm/chat-request';
import { ScriptedLlmAdapter } from '../llm/scripted-llm-adapter';
import { EditFileTool } from '../tool/impl/edit-file-tool';
import { ReadFileTool } from '../tool/impl/read-file-tool';
import { WriteFileTool } from '../tool/impl/write-file-tool';
import { BaseTool, type ToolCapabilities } from '../tool/tool';
import { ToolDispatcher } from '../tool/tool-dispatcher';
import { ToolRegistry } from '../tool/tool-registry';
import type { AgentEventListener } from './agent-event-listener';
import { AgentExecutionContext } from './agent-execution-context';
import { AgentLoop } from './agent-loop';

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' };

/** Records, across calls, how many were running at once. */
class Overlap {
  running = 0;
  most = 0;
  readonly order: string[] = [];
  enter(name: string): void {
    this.running += 1;
    this.most = Math.max(this.most, this.running);
    this.order.push(`start ${name}`);
  }
  leave(name: string): void {
    this.running -= 1;
    this.order.push(`end ${name}`);
  }
}

/**
 * A tool that, once entered, waits for `expected` calls to be inside at the same time before any
 * returns — or gives up (and says so) after a long while. Declares whether it is read-only.
 */
class GatheringTool extends BaseTool {
  private readonly waiting: Array<() => void> = [];
  constructor(
    private readonly name: string,
    private readonly readOnly: boolean,
    private readonly overlap: Overlap,
    private readonly expected: number,
  ) {
    super();
  }
  getName(): string {
    return this.name;
  }
  getDescription(): string {
    return 'gathers';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  protected override capabilities(): ToolCapabilities {
    return this.readOnly ? { annotations: { readOnlyHint: true } } : {};
  }
  protected override async executeWithUser(argumentsJson: string): Promise<string> {
    const id = String((JSON.parse(argumentsJson) as { id: unknown }).id);
    this.overlap.enter(id);
    const gathered = this.overlap.running >= this.expected;
    if (gathered) for (const release of this.waiting.splice(0)) release();
    const met = gathered || (await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 2_000);
      this.waiting.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    }));
    // Leave on a later turn, so a call that waits for this one cannot start in between.
    await new Promise((resolve) => setImmediate(resolve));
    this.overlap.leave(id);
    return met ? 'met' : 'alone';
  }
}

const silent: AgentEventListener = {
  onContentDelta: () => undefined,
  onToolCallStart: () => undefined,
  onToolCallResult: () => undefined,
  onMessageEnd: () => undefined,
  onError: () => undefined,
};

function run(tools: BaseTool[], toolCalls: Array<{ id: string; name: string; arguments: unknown }>, workspace = '/ws') {
  const registry = new ToolRegistry(tools);
  const loop = new AgentLoop({
    llm: new ScriptedLlmAdapter({ rounds: [{ toolCalls }, { content: 'done' }] }),
    dispatcher: new ToolDispatcher({ registry }),
    registry,
    logger: { warn: () => undefined },
  });
  const context = new AgentExecutionContext({
    sessionId: 5,
    userId: 1,
    executionMode: 'CLOUD',
    workspace,
    permissionLevel: 'FULL',
    modelConfig: MODEL,
    messages: [{ role: 'user', content: 'go' }],
  });
  return loop.execute(context, silent).then(() => context.messages.filter((message) => message.role === 'tool').map((message) => message.content));
}

describe('AgentLoop scheduling a round by its tools', () => {
  it('runs the read-only calls of a round together', async () => {
    const overlap = new Overlap();
    const tool = new GatheringTool('look', true, overlap, 10);
    const calls = Array.from({ length: 10 }, (_, index) => ({ id: `r${index}`, name: 'look', arguments: { id: index } }));
    const results = await run([tool], calls);
    expect(overlap.most).toBe(10);
    expect(results).toEqual(Array.from({ length: 10 }, () => 'met'));
  });

  it('runs a call that is not read-only after every call before it, and the calls after it after it', async () => {
    const overlap = new Overlap();
    // Nothing to gather: each call returns on a later turn, so what may overlap does.
    const look = new GatheringTool('look', true, overlap, 1);
    const change = new GatheringTool('change', false, overlap, 1);
    await run([look, change], [
      { id: 'a', name: 'look', arguments: { id: 'a' } },
      { id: 'b', name: 'look', arguments: { id: 'b' } },
      { id: 'c', name: 'change', arguments: { id: 'c' } },
      { id: 'd', name: 'look', arguments: { id: 'd' } },
      { id: 'e', name: 'change', arguments: { id: 'e' } },
    ]);
    const position = (entry: string): number => overlap.order.indexOf(entry);
    // a and b together; c alone after both; d after c; e after d.
    expect(position('start b')).toBeLessThan(position('end a'));
    expect(position('start c')).toBeGreaterThan(Math.max(position('end a'), position('end b')));
    expect(position('start d')).toBeGreaterThan(position('end c'));
    expect(position('start e')).toBeGreaterThan(position('end d'));
  });

  describe('with the built-in file tools', () => {
    let workspace: string;
    beforeEach(() => {
      workspace = mkdtempSync(path.join(tmpdir(), 'harness-schedule-'));
      writeFileSync(path.join(workspace, 'notes.txt'), 'old text\n');
    });
    afterEach(() => rmSync(workspace, { recursive: true, force: true }));

    it('lets a read after an edit of the same round see the edit', async () => {
      const results = await run(
        [new EditFileTool(), new ReadFileTool()],
        [
          { id: 'e', name: 'edit_file', arguments: { path: 'notes.txt', old_string: 'old text', new_string: 'new text' } },
          { id: 'r', name: 'read_file', arguments: { path: 'notes.txt' } },
        ],
        workspace,
      );
      expect(results[1]).toContain('new text');
      expect(results[1]).not.toContain('old text');
    });

    it('applies two writes of one file in call order', async () => {
      await run(
        [new WriteFileTool()],
        [
          { id: 'w1', name: 'write_file', arguments: { path: 'notes.txt', content: 'first' } },
          { id: 'w2', name: 'write_file', arguments: { path: 'notes.txt', content: 'second' } },
        ],
        workspace,
      );
      expect(readFileSync(path.join(workspace, 'notes.txt'), 'utf8')).toBe('second');
    });
  });
});
