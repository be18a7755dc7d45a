import { BenchHttp, BenchWatcher, endsRun, residentBytes, startBenchServer, type ReceivedEvent } from './bench-server';

/** A file the first round writes: a few lines, one of them for `grep` to find. */
function noteText(index: number): string {
  return Array.from({ length: 20 }, (_, line) => (line === 7 ? `TODO: follow up on note ${index}` : `Line ${line} of note ${index}: some ordinary text.`)).join('\n') + '\n';
}

interface ScriptedCall {
  name: string;
  arguments: Record<string, unknown>;
  /** Whether the call is meant to fail. */
  fails?: boolean;
}

/**
 * The realistic rounds of issue 15: ten `write_file`; then five `read_file`, `glob`, `grep`,
 * `edit_file`, `task_create` and a `read_file` of a file that does not exist; then a text answer.
 */
const ROUNDS: ScriptedCall[][] = [
  Array.from({ length: 10 }, (_, i) => ({ name: 'write_file', arguments: { path: `notes/note-${i}.md`, content: noteText(i) } })),
  [
    ...Array.from({ length: 5 }, (_, i) => ({ name: 'read_file', arguments: { path: `notes/note-${i}.md` } })),
    { name: 'glob', arguments: { pattern: 'notes/**/*.md' } },
    { name: 'grep', arguments: { pattern: 'TODO: follow up', glob: '*.md' } },
    { name: 'edit_file', arguments: { path: 'notes/note-0.md', old_string: 'TODO: follow up on note 0', new_string: 'DONE: followed up on note 0' } },
    { name: 'task_create', arguments: { title: 'Review the notes' } },
    { name: 'read_file', arguments: { path: 'notes/missing.md' }, fails: true },
  ],
];
const ANSWER = 'All done: ten notes written, read, searched and one edited.';

/** The scripted model's scenario for every session of the load. */
export function loadScenario(): unknown {
  return { rounds: [...ROUNDS.map((calls) => ({ toolCalls: calls.map(({ name, arguments: args }) => ({ name, arguments: args })) })), { content: ANSWER }] };
}

/** How the scripted model streams (`scripted-llm-adapter.ts`): arguments in at most three pieces, text by words. */
function argumentPieces(text: string): number {
  const length = Array.from(text).length;
  if (length === 0) return 0;
  return Math.ceil(length / Math.ceil(length / 3));
}

/** Every event one session of the load must receive: the calls' ids (`call_1`, … per session) and event counts. */
function expectedEvents(): { count: number; calls: Array<{ id: string; fails: boolean }> } {
  const calls: Array<{ id: string; fails: boolean }> = [];
  let count = 0;
  for (const round of ROUNDS) {
    for (const call of round) {
      calls.push({ id: `call_${calls.length + 1}`, fails: call.fails === true });
      // tool_call_start, the argument pieces, tool_call_result, activity
      count += 2 + argumentPieces(JSON.stringify(call.arguments)) + 1;
    }
  }
  count += (ANSWER.match(/\s*\S+\s*/g) ?? []).length + 1;
  return { count, calls };
}

/** What is wrong with one session's events: lost, repeated, reordered or unexpected ones. */
export function checkSessionEvents(events: ReceivedEvent[]): string[] {
  const problems: string[] = [];
  const expected = expectedEvents();
  if (events.length !== expected.count) problems.push(`${events.length} events instead of ${expected.count}`);
  events.forEach((event, index) => {
    if (event.seq !== index + 1) problems.push(`event ${index + 1} (${event.type}) has seq ${String(event.seq)}`);
  });
  const ends = events.filter(endsRun);
  if (ends.length !== 1 || events[events.length - 1]?.type !== 'message_end') problems.push(`ended with ${events[events.length - 1]?.type ?? 'nothing'}`);
  const results = events.filter((event) => event.type === 'tool_call_result');
  const resultOrder = results.map((event) => event.data.tool_call_id).join(',');
  if (resultOrder !== expected.calls.map((call) => call.id).join(',')) problems.push(`results in the order ${resultOrder}`);
  for (const call of expected.calls) {
    const at = (type: string) => events.findIndex((event) => event.type === type && event.data.tool_call_id === call.id);
    const start = at('tool_call_start');
    const result = at('tool_call_result');
    const status = result >= 0 ? events[result].data.status : undefined;
    if (start < 0 || result < start) problems.push(`${call.id}: start at ${start}, result at ${result}`);
    if (status !== (call.fails ? 'error' : 'success')) problems.push(`${call.id}: status ${String(status)}`);
    // The call's activity is the next activity after its result.
    const activity = events.findIndex((event, index) => index > result && event.type === 'activity');
    if (activity < 0 || events.slice(result + 1, activity).some((event) => event.type === 'tool_call_result')) problems.push(`${call.id}: no activity after its result`);
  }
  return problems;
}

export interface WaveResult {
  wave: number;
  sessions: number;
  /** Events received by all clients, and how many the script makes them expect. */
  events: number;
  expectedEvents: number;
  /** Sessions whose events were not exactly the expected ones in the expected order, with what was wrong. */
  problems: string[];
  /** Each session's time from its POST to its `message_end`, in ms. */
  latenciesMs: number[];
  /** Resident memory of the server process a second after the wave ended. */
  rssAfter: number;
  wallMs: number;
}

export interface LoadResult {
  /** Resident memory of the idle server before the first wave. */
  rssIdle: number;
  waves: WaveResult[];
}

export interface LoadBenchOptions {
  sessions: number;
  waves: number;
  /** Pause after a wave before its memory is read. */
  settleMs?: number;
  /** The server's entry point (default: this build's `dist/main.js`). */
  main?: string;
  /** Called after each wave has settled, before its memory is read (to take a heap snapshot, say). */
  afterWave?: (serverPid: number, wave: number) => Promise<void>;
}

/**
 * The load of issue 15: `sessions` users at once, each with its own WebSocket client and a new
 * session, post a message at the same moment; each run makes two rounds of realistic calls, then
 * answers. Repeated in `waves` identical waves, each with new sessions and new connections, on one
 * server process, to show what sessions leave behind.
 */
export async function runLoadBench(options: LoadBenchOptions): Promise<LoadResult> {
  const settleMs = options.settleMs ?? 2_500;
  const server = await startBenchServer({ scenario: loadScenario(), users: options.sessions, main: options.main });
  const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  try {
    await pause(settleMs);
    const rssIdle = residentBytes(server.pid);
    const waves: WaveResult[] = [];
    const expected = expectedEvents().count;
    for (let wave = 1; wave <= options.waves; wave++) {
      const users = Array.from({ length: options.sessions }, (_, i) => i + 1);
      const clients = await Promise.all(
        users.map(async (user) => {
          const http = new BenchHttp(server, user);
          const watcher = await BenchWatcher.connect(server, user, true);
          const sessionId = await http.createSession();
          return { http, watcher, sessionId };
        }),
      );
      const started = performance.now();
      const runs = await Promise.all(
        clients.map(async ({ http, watcher, sessionId }) => {
          const { executionId, postedAt } = await http.postMessage(sessionId, 'Write the notes, then review them.');
          const events = await watcher.runEnded(executionId);
          return { latency: events[events.length - 1].receivedAt - postedAt, events: watcher.all.filter((event) => event.sessionId === sessionId) };
        }),
      );
      const wallMs = performance.now() - started;
      const problems: string[] = [];
      runs.forEach((run, index) => {
        const found = checkSessionEvents(run.events);
        if (found.length > 0) problems.push(`session of user ${index + 1}: ${found.slice(0, 3).join('; ')}`);
      });
      await Promise.all(
        clients.map(async ({ http, watcher }) => {
          http.close();
          await watcher.close();
        }),
      );
      await pause(settleMs);
      await options.afterWave?.(server.pid, wave);
      waves.push({
        wave,
        sessions: options.sessions,
        events: runs.reduce((sum, run) => sum + run.events.length, 0),
        expectedEvents: expected * options.sessions,
        problems,
        latenciesMs: runs.map((run) => run.latency),
        rssAfter: residentBytes(server.pid),
        wallMs,
      });
    }
    return { rssIdle, waves };
  } finally {
    await server.stop();
  }
}
