import { BackgroundTaskManager } from '../runtime/background-task-manager';
import type { LlmModelConfig } from '../llm/chat-request';
import { ApprovalRegistry } from '../local/approval-registry';
import { LocalToolExecutor } from '../local/local-tool-executor';
import { LocalToolSessionRegistry } from '../local/local-tool-session-registry';
import { McpToolAdapter } from '../mcp/mcp-tool-adapter';
import { AskUserQuestionsRegistry } from './ask-user-questions-registry';
import { DangerAssessor } from './danger-assessor';
import { InMemoryTaskStore } from './impl/in-memory-task-store';
import { TaskCreateTool } from './impl/task-create-tool';
import { TaskListTool } from './impl/task-list-tool';
import { BaseTool, type Tool } from './tool';
import type { ToolDescriptor } from './tool-descriptor';
import { ToolDispatcher } from './tool-dispatcher';
import type { ToolInvocation } from './tool-invocation';
import { ToolRegistry } from './tool-registry';

const OWNER = 1;
const SESSION = 42;
const WORKSPACE = '/workspace/s42';
const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'm' };

class ProbeTool extends BaseTool {
  constructor(private readonly name = 'probe') {
    super();
  }
  getName(): string {
    return this.name;
  }
  getDescription(): string {
    return 'reports its call';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  override execute(...args: unknown[]): string {
    return JSON.stringify({ tool: this.name, args });
  }
}

class ThrowingTool extends BaseTool {
  getName(): string {
    return 'explode';
  }
  getDescription(): string {
    return 'throws';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  protected override executeImpl(): string {
    throw new Error('boom');
  }
}

/** A session tool that says it comes from an MCP server, although its name has no `mcp__` prefix. */
class DescribedMcpTool extends ProbeTool {
  constructor() {
    super('search_docs');
  }
  override getDescriptor(): ToolDescriptor {
    return { name: 'search_docs', source: 'mcp', executor: 'desktop', serverId: 3, originalName: 'search' };
  }
}

function setup(options: { connected?: boolean; storedLevel?: string | null; now?: () => number } = {}) {
  const taskStore = new InMemoryTaskStore(() => new Date('2026-01-01T00:00:00Z'));
  const registry = new ToolRegistry([new ProbeTool(), new ThrowingTool(), new TaskCreateTool(taskStore), new TaskListTool(taskStore)]);
  const localSessions = new LocalToolSessionRegistry({ newId: sequence('req') });
  const askUserQuestions = new AskUserQuestionsRegistry({ newId: sequence('ask') });
  const requests: Array<{ toolName: string; needApproval: boolean; dangerReason: string | null }> = [];
  localSessions.bindSession(SESSION, OWNER);
  if (options.connected !== false) {
    localSessions.addConnection('desktop', OWNER, (event) => {
      if (event.type !== 'tool_request') return;
      const data = event.data as { requestId: string; toolName: string; needApproval: boolean; dangerReason: string | null };
      requests.push({ toolName: data.toolName, needApproval: data.needApproval, dangerReason: data.dangerReason });
      setImmediate(() => localSessions.completeRequest(data.requestId, `desktop ran ${data.toolName}`, OWNER));
    });
  }
  const dispatcher = new ToolDispatcher({
    registry,
    localExecutor: new LocalToolExecutor(localSessions, new ApprovalRegistry(), { timeoutMs: 2_000 }),
    localSessions,
    askUserQuestions,
    dangerAssessor: new DangerAssessor(null),
    permissionLookup: { getPermissionLevel: () => options.storedLevel ?? null },
    backgroundTasks: new BackgroundTaskManager(),
    askTimeoutMs: 2_000,
    now: options.now,
  });
  return { dispatcher, requests };
}

function sequence(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}-${++n}`;
}

function invocation(overrides: Partial<ToolInvocation>): ToolInvocation {
  return {
    callId: 'call-1',
    toolName: 'probe',
    argumentsJson: '{}',
    executionMode: null,
    sessionId: null,
    userId: null,
    executionUserId: null,
    workspace: null,
    permissionLevel: null,
    modelConfig: null,
    sessionTools: null,
    ...overrides,
  };
}

const desktopOnly = new McpToolAdapter({ serverId: 3, serverName: 'files', toolName: 'open', description: 'opens', inputSchema: { type: 'object' } }, null);
const sessionTool = new ProbeTool('session_tool');

/**
 * The cases of the legacy dispatcher spec, each as its positional `dispatch` call and as the
 * invocation that means the same. Both entries must produce the same content.
 */
const MIRROR_CASES: Array<[string, unknown[], Partial<ToolInvocation>]> = [
  ['(name, args)', ['probe', '{"x":1}'], { argumentsJson: '{"x":1}' }],
  ['(name, args, workspace)', ['probe', '{}', WORKSPACE], { workspace: WORKSPACE }],
  ['5: mode, session, workspace', ['probe', '{}', 'CLOUD', SESSION, WORKSPACE], { executionMode: 'CLOUD', sessionId: SESSION, workspace: WORKSPACE }],
  [
    '7: … level, model',
    ['probe', '{}', 'CLOUD', SESSION, WORKSPACE, 'READ_ONLY', MODEL],
    { executionMode: 'CLOUD', sessionId: SESSION, workspace: WORKSPACE, permissionLevel: 'READ_ONLY', modelConfig: MODEL },
  ],
  [
    '8: … user',
    ['probe', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null],
    { executionMode: 'CLOUD', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'FULL' },
  ],
  [
    '9: session tools',
    ['session_tool', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, [sessionTool]],
    { toolName: 'session_tool', executionMode: 'CLOUD', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'FULL', sessionTools: [sessionTool] },
  ],
  [
    '10: execution user',
    ['probe', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, null, 9],
    { executionMode: 'CLOUD', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'FULL', executionUserId: 9 },
  ],
  ['4: widest form', ['probe', '{}', 'CLOUD', SESSION], { executionMode: 'CLOUD', sessionId: SESSION }],
  ['6: widest form', ['probe', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE], { executionMode: 'CLOUD', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE }],
  [
    'desktop MCP adapter in CLOUD',
    ['mcp__files__open', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, [desktopOnly]],
    { toolName: 'mcp__files__open', executionMode: 'CLOUD', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'FULL', sessionTools: [desktopOnly] },
  ],
  [
    'server-only task tool in LOCAL',
    ['task_create', '{"title":"write docs"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'READ_ONLY', null],
    { toolName: 'task_create', argumentsJson: '{"title":"write docs"}', executionMode: 'LOCAL', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'READ_ONLY' },
  ],
  [
    'LOCAL read tool',
    ['read_file', '{"path":"a.txt"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'FULL', null],
    { toolName: 'read_file', argumentsJson: '{"path":"a.txt"}', executionMode: 'LOCAL', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'FULL' },
  ],
  [
    'ask_user_questions without questions',
    ['ask_user_questions', '{"questions":[]}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null],
    { toolName: 'ask_user_questions', argumentsJson: '{"questions":[]}', executionMode: 'CLOUD', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'FULL' },
  ],
  [
    'async shell on the desktop',
    ['shell', '{"command":"make","async":true}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'FULL', null, null, null],
    { toolName: 'shell', argumentsJson: '{"command":"make","async":true}', executionMode: 'LOCAL', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'FULL' },
  ],
];

/** Legacy calls that threw; the new entry answers them with an error result instead. */
const THROWING_CASES: Array<[string, unknown[], Partial<ToolInvocation>, string]> = [
  ['unknown tool, light form', ['nope', '{}'], { toolName: 'nope' }, 'Unknown tool: nope'],
  ['unknown tool, with workspace', ['nope', '{}', WORKSPACE], { toolName: 'nope', workspace: WORKSPACE }, 'Unknown tool: nope'],
  ['constructor', ['constructor', '{}'], { toolName: 'constructor' }, 'Unknown tool: constructor'],
  ['__proto__', ['__proto__', '{}', WORKSPACE], { toolName: '__proto__', workspace: WORKSPACE }, 'Unknown tool: __proto__'],
  [
    'toString in CLOUD',
    ['toString', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null],
    { toolName: 'toString', executionMode: 'CLOUD', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'FULL' },
    'Unknown tool: toString',
  ],
  ['a tool that throws', ['explode', '{}'], { toolName: 'explode' }, 'boom'],
  [
    'a tool that throws, full form',
    ['explode', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, null, null],
    { toolName: 'explode', executionMode: 'CLOUD', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'FULL' },
    'boom',
  ],
  [
    'an MCP name that no tool has',
    ['mcp__demo__echo', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, [], null],
    { toolName: 'mcp__demo__echo', executionMode: 'CLOUD', sessionId: SESSION, userId: OWNER, workspace: WORKSPACE, permissionLevel: 'FULL', sessionTools: [] },
    'Unknown tool: mcp__demo__echo',
  ],
];

describe('ToolDispatcher.dispatchInvocation', () => {
  describe('mirrors the legacy dispatch', () => {
    it.each(MIRROR_CASES)('%s gives the same content through both entries', async (_label, positional, fields) => {
      const legacy = await (setup().dispatcher.dispatch as (...args: unknown[]) => Promise<string>)(...positional);
      const result = await setup().dispatcher.dispatchInvocation(invocation(fields));
      expect(result.content).toBe(legacy);
      expect(result.callId).toBe('call-1');
    });

    it.each(THROWING_CASES)('%s: the legacy entry throws, the new one answers with an error result', async (_label, positional, fields, message) => {
      await expect((setup().dispatcher.dispatch as (...args: unknown[]) => Promise<string>)(...positional)).rejects.toThrow(message);
      const result = await setup().dispatcher.dispatchInvocation(invocation(fields));
      expect(result).toEqual({
        callId: 'call-1',
        status: 'error',
        content: `Tool execution failed: ${message}`,
        errorMessage: message,
        durationMs: expect.any(Number),
      });
    });
  });

  describe('when it builds the result', () => {
    it('classifies the content where the tool ran', async () => {
      const { dispatcher } = setup();
      const ok = await dispatcher.dispatchInvocation(invocation({ toolName: 'task_list', executionMode: 'CLOUD', sessionId: SESSION }));
      expect(ok.status).toBe('success');
      const failed = await dispatcher.dispatchInvocation(invocation({ toolName: 'task_list' }));
      expect(failed).toEqual(expect.objectContaining({ status: 'error', errorMessage: expect.stringContaining('session') }));
    });

    it('measures each call with its own clock readings', async () => {
      const readings = [100, 107.5, 200, 200];
      const { dispatcher } = setup({ now: () => readings.shift() ?? 0 });
      expect((await dispatcher.dispatchInvocation(invocation({}))).durationMs).toBe(7.5);
      expect((await dispatcher.dispatchInvocation(invocation({ toolName: 'explode' }))).durationMs).toBe(0);
    });

    it('answers a tool that returns something other than a string with text', async () => {
      const weird: Tool = {
        getName: () => 'weird',
        getDescription: () => 'returns an object',
        getInputSchema: () => ({ type: 'object' }),
        getOutputSchema: () => null,
        execute: () => ({ error: 'as an object' }) as unknown as string,
      };
      const result = await setup().dispatcher.dispatchInvocation(invocation({ toolName: 'weird', executionMode: 'CLOUD', sessionTools: [weird] }));
      expect(result).toEqual(expect.objectContaining({ status: 'error', content: '{"error":"as an object"}', errorMessage: 'as an object' }));
    });

    it('turns a descriptor that throws into an error result', async () => {
      const broken = new ProbeTool('broken');
      broken.getDescriptor = () => {
        throw new Error('no descriptor today');
      };
      const result = await setup().dispatcher.dispatchInvocation(invocation({ toolName: 'broken', executionMode: 'LOCAL', sessionId: SESSION, sessionTools: [broken] }));
      expect(result).toEqual(expect.objectContaining({ status: 'error', content: 'Tool execution failed: no descriptor today' }));
    });
  });

  describe('approval driven by the descriptor', () => {
    const expectations: Array<[string, boolean]> = [
      ['READ_ONLY', true],
      ['READ_WRITE', true],
      ['SMART', true],
      ['FULL', false],
    ];

    it.each(expectations)('at %s treats a tool described as MCP like an MCP tool, whatever its name', async (level, expected) => {
      const { dispatcher, requests } = setup();
      await dispatcher.dispatchInvocation(
        invocation({ toolName: 'search_docs', executionMode: 'LOCAL', sessionId: SESSION, userId: OWNER, permissionLevel: level, sessionTools: [new DescribedMcpTool()] }),
      );
      expect(requests).toEqual([expect.objectContaining({ toolName: 'search_docs', needApproval: expected })]);
    });

    it.each(expectations)('at %s still treats an mcp__ name without a descriptor as an MCP tool', async (level, expected) => {
      const { dispatcher, requests } = setup();
      await dispatcher.dispatchInvocation(invocation({ toolName: 'mcp__demo__echo', executionMode: 'LOCAL', sessionId: SESSION, userId: OWNER, permissionLevel: level }));
      expect(requests[0].needApproval).toBe(expected);
    });

    it('does not let a plain-named tool of an MCP server pass as a read tool at READ_WRITE', async () => {
      const { dispatcher, requests } = setup();
      await dispatcher.dispatchInvocation(invocation({ toolName: 'read_file', executionMode: 'LOCAL', sessionId: SESSION, permissionLevel: 'READ_WRITE' }));
      await dispatcher.dispatchInvocation(
        invocation({ toolName: 'search_docs', executionMode: 'LOCAL', sessionId: SESSION, permissionLevel: 'READ_WRITE', sessionTools: [new DescribedMcpTool()] }),
      );
      expect(requests.map((request) => [request.toolName, request.needApproval])).toEqual([
        ['read_file', false],
        ['search_docs', true],
      ]);
    });

    it.each(expectations)('at %s asks for approval for a name the server does not know at all', async (level, expected) => {
      const { dispatcher, requests } = setup();
      await dispatcher.dispatchInvocation(invocation({ toolName: 'wipe_disk', executionMode: 'LOCAL', sessionId: SESSION, userId: OWNER, permissionLevel: level }));
      expect(requests).toEqual([
        expected
          ? { toolName: 'wipe_disk', needApproval: true, dangerReason: "'wipe_disk' is not a tool this server knows; the desktop would run it unchecked" }
          : { toolName: 'wipe_disk', needApproval: false, dangerReason: null },
      ]);
    });

    it('runs declared read-only tools unasked and asks for tools that declare nothing', async () => {
      const { dispatcher, requests } = setup();
      for (const toolName of ['read_file', 'glob', 'grep', 'probe', 'session_tool']) {
        await dispatcher.dispatchInvocation(
          invocation({ toolName, executionMode: 'LOCAL', sessionId: SESSION, permissionLevel: 'READ_ONLY', sessionTools: [sessionTool] }),
        );
      }
      expect(requests.map((request) => [request.toolName, request.needApproval])).toEqual([
        ['read_file', false],
        ['glob', false],
        ['grep', false],
        ['probe', true],
        ['session_tool', true],
      ]);
    });

    it('describes the desktop MCP adapter as an MCP tool even in LOCAL mode', async () => {
      const { dispatcher, requests } = setup({ storedLevel: 'READ_WRITE' });
      await dispatcher.dispatchInvocation(
        invocation({ toolName: 'mcp__files__open', executionMode: 'LOCAL', sessionId: SESSION, permissionLevel: 'FULL', sessionTools: [desktopOnly] }),
      );
      expect(requests[0]).toEqual(expect.objectContaining({ needApproval: true, dangerReason: expect.stringContaining('MCP') }));
    });
  });
});
