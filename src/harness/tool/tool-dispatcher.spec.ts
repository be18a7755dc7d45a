import { BackgroundTaskManager } from '../core/background-task-manager';
import type { LlmModelConfig } from '../llm/chat-request';
import { ApprovalRegistry } from '../local/approval-registry';
import type { ClientEvent } from '../local/client-event';
import { LocalToolExecutor } from '../local/local-tool-executor';
import { LocalToolSessionRegistry } from '../local/local-tool-session-registry';
import { McpToolAdapter } from '../mcp/mcp-tool-adapter';
import { AskUserQuestionsRegistry } from './ask-user-questions-registry';
import { DangerAssessor, type DangerClassifierModel } from './danger-assessor';
import { InMemoryTaskStore } from './impl/in-memory-task-store';
import { TaskCreateTool } from './impl/task-create-tool';
import { TaskListTool } from './impl/task-list-tool';
import { BaseTool, type Tool } from './tool';
import { ToolDispatcher } from './tool-dispatcher';
import { ToolRegistry } from './tool-registry';

/** A tool that reports exactly what it was called with. */
class ProbeTool implements Tool {
  readonly calls: unknown[][] = [];
  constructor(private readonly name = 'probe') {}
  getName(): string {
    return this.name;
  }
  getDescription(): string {
    return 'reports its call';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object', properties: {} };
  }
  getOutputSchema(): Record<string, unknown> | null {
    return null;
  }
  execute(...args: unknown[]): string {
    this.calls.push(args);
    return JSON.stringify({ tool: this.name, arity: args.length, args });
  }
}

class ThrowingTool extends BaseTool {
  getName(): string {
    return 'explode';
  }
  getDescription(): string {
    return 'always throws';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object', properties: {} };
  }
  protected override executeImpl(): string {
    throw new Error('boom');
  }
}

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'classifier' };
const OWNER = 1;
const SESSION = 42;
const WORKSPACE = '/workspace/s42';

interface DesktopRequest {
  requestId: string;
  toolName: string;
  arguments: string;
  workspace: string | null;
  needApproval: boolean;
  dangerReason: string | null;
}

function classifier(verdict: string | Error): DangerClassifierModel {
  return {
    complete: async () => {
      if (verdict instanceof Error) throw verdict;
      return verdict;
    },
  };
}

function setup(options: { storedLevel?: string | null; classifierModel?: DangerClassifierModel | null; connected?: boolean } = {}) {
  const probe = new ProbeTool();
  const taskStore = new InMemoryTaskStore();
  const registry = new ToolRegistry([probe, new ThrowingTool(), new TaskCreateTool(taskStore), new TaskListTool(taskStore)]);
  const localSessions = new LocalToolSessionRegistry();
  const approvals = new ApprovalRegistry();
  const askUserQuestions = new AskUserQuestionsRegistry();
  const backgroundTasks = new BackgroundTaskManager();
  const desktopRequests: DesktopRequest[] = [];
  const questionEvents: ClientEvent[] = [];
  let desktopReply: (request: DesktopRequest) => string | null = (request) => `desktop ran ${request.toolName}`;

  localSessions.bindSession(SESSION, OWNER);
  if (options.connected !== false) {
    localSessions.addConnection('desktop-1', OWNER, (event) => {
      if (event.type === 'tool_request') {
        const request = event.data as unknown as DesktopRequest;
        desktopRequests.push(request);
        const reply = desktopReply(request);
        if (reply !== null) setImmediate(() => localSessions.completeRequest(request.requestId, reply, OWNER));
      } else {
        questionEvents.push(event);
      }
    });
  }
  const dispatcher = new ToolDispatcher({
    registry,
    localExecutor: new LocalToolExecutor(localSessions, approvals, { timeoutMs: 2_000 }),
    localSessions,
    askUserQuestions,
    dangerAssessor: new DangerAssessor(options.classifierModel === undefined ? null : options.classifierModel),
    permissionLookup: { getPermissionLevel: () => options.storedLevel ?? null },
    backgroundTasks,
    askTimeoutMs: 2_000,
  });
  return {
    dispatcher,
    probe,
    taskStore,
    localSessions,
    askUserQuestions,
    backgroundTasks,
    desktopRequests,
    questionEvents,
    setDesktopReply: (reply: typeof desktopReply) => {
      desktopReply = reply;
    },
  };
}

function parse(result: string): Record<string, unknown> {
  return JSON.parse(result) as Record<string, unknown>;
}

describe('ToolDispatcher.dispatch (legacy positional entry)', () => {
  describe('when called with the cloud forms', () => {
    it('(name, args) runs the registry tool with the arguments only', async () => {
      const { dispatcher } = setup();
      const result = await dispatcher.dispatch('probe', '{"x":1}');
      expect(parse(result)).toEqual({ tool: 'probe', arity: 1, args: ['{"x":1}'] });
    });

    it('(name) alone is the same light form', async () => {
      const { dispatcher, probe } = setup();
      await (dispatcher.dispatch as (name: string) => Promise<string>)('probe');
      expect(probe.calls).toHaveLength(1);
      expect(probe.calls[0]).toHaveLength(1);
    });

    it('(name, args, workspace) passes the workspace as the only context', async () => {
      const { dispatcher } = setup();
      const result = await dispatcher.dispatch('probe', '{}', WORKSPACE);
      expect(parse(result)).toEqual({ tool: 'probe', arity: 2, args: ['{}', WORKSPACE] });
    });

    it('rejects an unknown tool with its name', async () => {
      const { dispatcher } = setup();
      await expect(dispatcher.dispatch('nope', '{}')).rejects.toThrow('Unknown tool: nope');
      await expect(dispatcher.dispatch('nope', '{}', WORKSPACE)).rejects.toThrow('Unknown tool: nope');
    });

    it('resolves no tool for names that are properties of plain objects', async () => {
      const { dispatcher } = setup();
      await expect(dispatcher.dispatch('constructor', '{}')).rejects.toThrow('Unknown tool: constructor');
      await expect(dispatcher.dispatch('__proto__', '{}', WORKSPACE)).rejects.toThrow('Unknown tool: __proto__');
      await expect(dispatcher.dispatch('toString', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null)).rejects.toThrow(
        'Unknown tool: toString',
      );
    });

    it('lets an error thrown by the tool reach the caller', async () => {
      const { dispatcher } = setup();
      await expect(dispatcher.dispatch('explode', '{}')).rejects.toThrow('boom');
      await expect(dispatcher.dispatch('explode', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, null, null)).rejects.toThrow(
        'boom',
      );
    });
  });

  describe('when called with the session forms in CLOUD mode', () => {
    it('5 arguments: (name, args, mode, sessionId, workspace)', async () => {
      const { dispatcher } = setup();
      const result = await dispatcher.dispatch('probe', '{}', 'CLOUD', SESSION, WORKSPACE);
      expect(parse(result)).toEqual({ tool: 'probe', arity: 4, args: ['{}', SESSION, null, WORKSPACE] });
    });

    it('7 arguments: (name, args, mode, sessionId, workspace, level, modelConfig)', async () => {
      const { dispatcher } = setup();
      const result = await dispatcher.dispatch('probe', '{}', 'CLOUD', SESSION, WORKSPACE, 'READ_ONLY', MODEL);
      expect(parse(result)).toEqual({ tool: 'probe', arity: 4, args: ['{}', SESSION, null, WORKSPACE] });
    });

    it('8 arguments: (name, args, mode, sessionId, userId, workspace, level, modelConfig)', async () => {
      const { dispatcher } = setup();
      const result = await dispatcher.dispatch('probe', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null);
      expect(parse(result)).toEqual({ tool: 'probe', arity: 4, args: ['{}', SESSION, OWNER, WORKSPACE] });
    });

    it('9 arguments: session tools are found after the registry', async () => {
      const { dispatcher } = setup();
      const own = new ProbeTool('session_tool');
      const shadow = new ProbeTool('probe');
      const result = await dispatcher.dispatch('session_tool', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, [own, shadow]);
      expect(parse(result)).toEqual({ tool: 'session_tool', arity: 4, args: ['{}', SESSION, OWNER, WORKSPACE] });
      await dispatcher.dispatch('probe', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, [own, shadow]);
      expect(shadow.calls).toHaveLength(0);
    });

    it('10 arguments: the tool runs under the execution user when one is given', async () => {
      const { dispatcher } = setup();
      const delegated = await dispatcher.dispatch('probe', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, null, 9);
      expect(parse(delegated).args).toEqual(['{}', SESSION, 9, WORKSPACE]);
      const own = await dispatcher.dispatch('probe', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, null, null);
      expect(parse(own).args).toEqual(['{}', SESSION, OWNER, WORKSPACE]);
    });

    it('4 and 6 arguments are read as the widest form', async () => {
      const { dispatcher } = setup();
      const four = await (dispatcher.dispatch as (...args: unknown[]) => Promise<string>)('probe', '{}', 'CLOUD', SESSION);
      expect(parse(four).args).toEqual(['{}', SESSION, null, null]);
      const six = await (dispatcher.dispatch as (...args: unknown[]) => Promise<string>)('probe', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE);
      expect(parse(six).args).toEqual(['{}', SESSION, OWNER, WORKSPACE]);
    });

    it('an MCP adapter that stands for a desktop tool refuses to run on the server', async () => {
      const { dispatcher } = setup();
      const desktopOnly = new McpToolAdapter(
        { serverId: 3, serverName: 'files', toolName: 'open', description: 'opens', inputSchema: { type: 'object' } },
        null,
      );
      const result = await dispatcher.dispatch('mcp__files__open', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, [desktopOnly]);
      expect(typeof parse(result).error).toBe('string');
    });

    it('rejects a tool that is neither registered nor a session tool', async () => {
      const { dispatcher } = setup();
      await expect(
        dispatcher.dispatch('mcp__demo__echo', '{}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null, [], null),
      ).rejects.toThrow('Unknown tool: mcp__demo__echo');
    });
  });

  describe('when a tool must run on the server', () => {
    it('runs the task tools on the server even in LOCAL mode', async () => {
      const { dispatcher, desktopRequests, taskStore } = setup();
      const created = await dispatcher.dispatch('task_create', '{"title":"write docs"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'READ_ONLY', null);
      expect(parse(created).error).toBeUndefined();
      expect(taskStore.list(SESSION).map((task) => task.title)).toEqual(['write docs']);
      const listed = await dispatcher.dispatch('task_list', '{}', 'LOCAL', SESSION, WORKSPACE);
      expect(listed).toContain('write docs');
      expect(desktopRequests).toHaveLength(0);
    });
  });

  describe('when the session runs in LOCAL mode', () => {
    it('sends the call to the desktop client and returns its answer unchanged', async () => {
      const { dispatcher, desktopRequests, setDesktopReply } = setup();
      setDesktopReply(() => '{"content":"hello","lines":1}');
      const result = await dispatcher.dispatch('read_file', '{"path":"a.txt"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'FULL', null);
      expect(result).toBe('{"content":"hello","lines":1}');
      expect(desktopRequests).toEqual([
        expect.objectContaining({ toolName: 'read_file', arguments: '{"path":"a.txt"}', workspace: WORKSPACE, needApproval: false }),
      ]);
    });

    it('answers with an error when no desktop client is connected', async () => {
      const { dispatcher } = setup({ connected: false });
      const result = await dispatcher.dispatch('read_file', '{"path":"a.txt"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'FULL', null);
      expect(typeof parse(result).error).toBe('string');
    });

    it('passes a rejected approval back as the desktop wrote it', async () => {
      const { dispatcher, setDesktopReply } = setup();
      setDesktopReply(() => '{"error":"User rejected the tool call"}');
      const result = await dispatcher.dispatch('shell', '{"command":"rm -rf build"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'READ_ONLY', null);
      expect(result).toBe('{"error":"User rejected the tool call"}');
    });

    const matrix: Array<[string, Record<string, boolean>]> = [
      ['READ_ONLY', { read_file: false, write_file: true, shell: true, mcp__demo__echo: true }],
      ['READ_WRITE', { read_file: false, write_file: false, shell: true, mcp__demo__echo: true }],
      ['SMART', { read_file: false, write_file: false, shell: true, mcp__demo__echo: true }],
      ['FULL', { read_file: false, write_file: false, shell: false, mcp__demo__echo: false }],
      ['NOT_A_LEVEL', { read_file: false, write_file: true, shell: true, mcp__demo__echo: true }],
    ];
    it.each(matrix)('at %s asks for approval exactly where the level requires it', async (level, expected) => {
      const { dispatcher, desktopRequests } = setup();
      const args: Record<string, string> = {
        read_file: '{"path":"a.txt"}',
        write_file: '{"path":"a.txt","content":"x"}',
        shell: '{"command":"ls"}',
        mcp__demo__echo: '{"text":"hi"}',
      };
      for (const tool of Object.keys(expected)) {
        await dispatcher.dispatch(tool, args[tool], 'LOCAL', SESSION, OWNER, WORKSPACE, level, MODEL);
      }
      const seen = Object.fromEntries(desktopRequests.map((request) => [request.toolName, request.needApproval]));
      expect(seen).toEqual(expected);
      for (const request of desktopRequests) {
        if (request.needApproval) expect(request.dangerReason).toEqual(expect.any(String));
      }
    });

    it('treats a missing level as READ_ONLY', async () => {
      const { dispatcher, desktopRequests } = setup();
      await dispatcher.dispatch('write_file', '{"path":"a.txt","content":"x"}', 'LOCAL', SESSION, WORKSPACE);
      expect(desktopRequests[0].needApproval).toBe(true);
    });

    describe('at SMART, a shell command is judged by the danger assessor', () => {
      it('runs a command the model judges safe without approval', async () => {
        const { dispatcher, desktopRequests } = setup({ classifierModel: classifier('{"dangerous":false,"reason":"lists files"}') });
        await dispatcher.dispatch('shell', '{"command":"ls"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'SMART', MODEL);
        expect(desktopRequests[0]).toEqual(expect.objectContaining({ needApproval: false, dangerReason: null }));
      });

      it('asks for approval, with the model reason, when the model judges it dangerous', async () => {
        const { dispatcher, desktopRequests } = setup({
          classifierModel: classifier('{"dangerous":true,"reason":"deletes the build directory"}'),
        });
        await dispatcher.dispatch('shell', '{"command":"rm -rf build"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'SMART', MODEL);
        expect(desktopRequests[0]).toEqual(expect.objectContaining({ needApproval: true, dangerReason: 'deletes the build directory' }));
      });

      it('asks for approval when the session has no model configuration', async () => {
        const { dispatcher, desktopRequests } = setup({ classifierModel: classifier('{"dangerous":false,"reason":"safe"}') });
        await dispatcher.dispatch('shell', '{"command":"ls"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'SMART', null);
        expect(desktopRequests[0].needApproval).toBe(true);
      });

      it('asks for approval when the model fails or answers nonsense', async () => {
        const failing = setup({ classifierModel: classifier(new Error('provider down')) });
        await failing.dispatcher.dispatch('shell', '{"command":"ls"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'SMART', MODEL);
        expect(failing.desktopRequests[0].needApproval).toBe(true);
        const confused = setup({ classifierModel: classifier('I am not sure') });
        await confused.dispatcher.dispatch('shell', '{"command":"ls"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'SMART', MODEL);
        expect(confused.desktopRequests[0].needApproval).toBe(true);
      });
    });

    it("uses the session's current permission level over the one the run started with", async () => {
      const relaxed = setup({ storedLevel: 'FULL' });
      await relaxed.dispatcher.dispatch('shell', '{"command":"ls"}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'READ_ONLY', null);
      expect(relaxed.desktopRequests[0].needApproval).toBe(false);
      const tightened = setup({ storedLevel: 'READ_ONLY' });
      await tightened.dispatcher.dispatch('write_file', '{"path":"a","content":""}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'FULL', null);
      expect(tightened.desktopRequests[0].needApproval).toBe(true);
    });

    it('starts an async shell on the desktop and delivers its result as a background task', async () => {
      const { dispatcher, backgroundTasks, desktopRequests, setDesktopReply } = setup();
      let finish: (() => void) | undefined;
      const answered = new Promise<void>((resolve) => (finish = resolve));
      setDesktopReply(() => {
        setImmediate(() => finish?.());
        return '{"exit_code":0,"stdout":"built"}';
      });
      const result = await dispatcher.dispatch(
        'shell', '{"command":"make","async":true}', 'LOCAL', SESSION, OWNER, WORKSPACE, 'FULL', null, null, null,
      );
      expect(parse(result)).toEqual(expect.objectContaining({ status: 'started', task_id: expect.any(String) }));
      expect(desktopRequests[0]).toEqual(expect.objectContaining({ toolName: 'shell', arguments: '{"command":"make","async":true}' }));
      await answered;
      await new Promise((resolve) => setImmediate(resolve));
      const finished = backgroundTasks.drainCompleted(SESSION);
      expect(finished).toEqual([
        expect.objectContaining({ taskId: parse(result).task_id, result: '{"exit_code":0,"stdout":"built"}' }),
      ]);
    });
  });

  describe('when the model asks the user questions', () => {
    const questions = '{"questions":[{"question":"Which database?","options":["SQLite","Postgres"]}]}';

    it('sends them to the connected client and returns the answers', async () => {
      const { dispatcher, questionEvents, askUserQuestions } = setup();
      const pending = dispatcher.dispatch('ask_user_questions', questions, 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null);
      await new Promise((resolve) => setImmediate(resolve));
      expect(questionEvents).toHaveLength(1);
      expect(questionEvents[0].type).toBe('ask_user_questions');
      const requestId = questionEvents[0].data.requestId as string;
      expect(questionEvents[0].data.questions).toEqual([{ question: 'Which database?', options: ['SQLite', 'Postgres'] }]);
      askUserQuestions.complete(requestId, { 'Which database?': 'SQLite' });
      expect(parse(await pending)).toEqual({ answers: { 'Which database?': 'SQLite' } });
    });

    it('answers with an error when no client is connected', async () => {
      const { dispatcher } = setup({ connected: false });
      const result = await dispatcher.dispatch('ask_user_questions', questions, 'LOCAL', SESSION, OWNER, WORKSPACE, 'FULL', null);
      expect(result).toBe('{"error":"No connected client to receive questions"}');
    });

    it('answers with an error naming the problem when there are no questions', async () => {
      const { dispatcher, questionEvents } = setup();
      const result = await dispatcher.dispatch('ask_user_questions', '{"questions":[]}', 'CLOUD', SESSION, OWNER, WORKSPACE, 'FULL', null);
      expect(String(parse(result).error)).toMatch(/question/i);
      expect(questionEvents).toHaveLength(0);
    });
  });
});
