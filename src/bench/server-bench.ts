import { BenchHttp, BenchWatcher, startBenchServer, type ReceivedEvent } from './bench-server';
import { median, percentile } from './stats';

/** The text-only answer: a short sentence, streamed word by word as the scripted model does. */
const TEXT_ANSWER = 'Hello there, this is a short answer.';

/** One timed workload of the real server: the time from `POST …/messages` to `message_end`. */
export interface ServerTiming {
  name: string;
  /** Tool calls per run (0 for the text-only answer). */
  calls: number;
  rounds: number;
  /** Each run's time from the POST to its `message_end` arriving, in ms. */
  runsMs: number[];
}

export interface ServerBenchOptions {
  parallelCalls: number[];
  rounds: number;
  textRuns: number;
  parallelRuns: number;
  roundRuns: number;
  /** How long each workload runs before it is measured. */
  warmupMs: number;
  /** The server's entry point (default: this build's `dist/main.js`). */
  main?: string;
}

/** The scripted model's scenario: one script per workload, picked by a marker in the first message. */
function scenario(options: ServerBenchOptions): unknown {
  return {
    rounds: [{ content: 'done' }],
    scripts: [
      { match: '[bench:text]', rounds: [{ content: TEXT_ANSWER }] },
      ...options.parallelCalls.map((calls) => ({
        match: `[bench:parallel:${calls}]`,
        rounds: [{ toolCalls: Array.from({ length: calls }, () => ({ name: 'task_list' })) }, { content: 'done' }],
      })),
      {
        match: '[bench:rounds]',
        rounds: [...Array.from({ length: options.rounds }, () => ({ toolCalls: [{ name: 'task_list' }] })), { content: 'done' }],
      },
    ],
  };
}

/**
 * The real server process (`node dist/main.js`: scripted model, a SQLite file, one WebSocket
 * client watching), timed from `POST /api/sessions/:id/messages` to the `message_end` the client
 * receives: a text-only answer, rounds of many parallel `task_list` calls, and many one-call
 * rounds. Each run is a new session (the scripted model answers per session).
 */
export async function runServerBench(options: ServerBenchOptions): Promise<ServerTiming[]> {
  const server = await startBenchServer({ scenario: scenario(options), main: options.main });
  const http = new BenchHttp(server);
  const watcher = await BenchWatcher.connect(server);
  const time = async (marker: string, runs: number, check: (events: ReceivedEvent[]) => void): Promise<number[]> => {
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) {
      const sessionId = await http.createSession();
      const { executionId, postedAt } = await http.postMessage(sessionId, `${marker} go`);
      const events = await watcher.runEnded(executionId);
      samples.push(events[events.length - 1].receivedAt - postedAt);
      check(events);
      watcher.forget(executionId);
    }
    return samples;
  };
  /**
   * Runs a workload until `warmupMs` have passed (at least twice): the server's JIT compiles its
   * hot functions on helper threads for the first seconds, which on a small machine takes the
   * cores the measured runs need.
   */
  const warm = async (marker: string, check: (events: ReceivedEvent[]) => void): Promise<void> => {
    for (let started = performance.now(), runs = 0; runs < 2 || performance.now() - started < options.warmupMs; runs++) await time(marker, 1, check);
  };
  const expectCalls = (calls: number) => (events: ReceivedEvent[]) => {
    const last = events[events.length - 1];
    const results = events.filter((event) => event.type === 'tool_call_result').length;
    if (last.type !== 'message_end' || results !== calls) throw new Error(`a run ended with ${last.type} after ${results} of ${calls} results`);
  };
  try {
    const timings: ServerTiming[] = [];
    await warm('[bench:text]', expectCalls(0));
    timings.push({ name: 'text-only answer', calls: 0, rounds: 1, runsMs: await time('[bench:text]', options.textRuns, expectCalls(0)) });
    for (const calls of options.parallelCalls) {
      await warm(`[bench:parallel:${calls}]`, expectCalls(calls));
      timings.push({
        name: `1 round × ${calls} parallel task_list`,
        calls,
        rounds: 1,
        runsMs: await time(`[bench:parallel:${calls}]`, options.parallelRuns, expectCalls(calls)),
      });
    }
    await warm('[bench:rounds]', expectCalls(options.rounds));
    timings.push({
      name: `${options.rounds} rounds × 1 task_list`,
      calls: options.rounds,
      rounds: options.rounds,
      runsMs: await time('[bench:rounds]', options.roundRuns, expectCalls(options.rounds)),
    });
    return timings;
  } finally {
    await watcher.close();
    http.close();
    await server.stop();
  }
}

/** Median and 90th percentile of a timing's runs, in ms. */
export function summarize(timing: ServerTiming): { medianMs: number; p90Ms: number } {
  return { medianMs: median(timing.runsMs), p90Ms: percentile(timing.runsMs, 0.9) };
}
