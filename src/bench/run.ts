import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { contractSections } from './contract-bench';
import { measureInProcess, type InProcessResult, type InProcessSubject } from './in-process-bench';
import { runLoadBench, type LoadResult } from './load-bench';
import type { Workload } from './loop-workload';
import { runServerBench, summarize, type ServerTiming } from './server-bench';
import { formatBytes, formatMs, formatNs, median, percentile, ratio } from './stats';

/**
 * `npm run bench`: the agent loop alone next to the AI SDK, the whole server process, the server
 * under load, and the cost of the tool contract. Prints a Markdown report;
 * `npm run bench -- --write docs/performance.md` also writes it there, and
 * `--only loop,server,load,contract` runs some sections. Every in-process workload runs in a
 * child process of its own, so that one's JIT state and heap do not weigh on the next.
 */

const SECTIONS = ['loop', 'server', 'load', 'contract'] as const;
type Section = (typeof SECTIONS)[number];

/** Parallel calls in one round: the loop's linearity is read off these. */
const PARALLEL_CALLS = [25, 100, 400, 1_600, 3_200];
/** One-call rounds: with the final answer, 41 model calls, within the server's 50 per run. */
const ROUNDS = 40;
/** The server's parallel workloads (the issue measured 400). */
const SERVER_PARALLEL = [100, 400];

/** Another build's `dist/main.js` (`HARNESS_BENCH_BASELINE`): the server and load sections measure it too, for comparison. */
const BASELINE = process.env.HARNESS_BENCH_BASELINE ?? null;
/** What the baseline is, for the report (`HARNESS_BENCH_BASELINE_NAME`, default its path). */
const BASELINE_NAME = process.env.HARNESS_BENCH_BASELINE_NAME ?? `the build at \`${BASELINE}\``;

const LOOP_WORKLOADS: Workload[] = [...PARALLEL_CALLS.map((calls) => ({ calls, rounds: 1 })), { calls: 1, rounds: ROUNDS }];
const SUBJECTS: InProcessSubject[] = ['harness', 'harness-no-deadline', 'ai-sdk'];

function childResult(subject: InProcessSubject, workload: Workload): Promise<InProcessResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--no-warnings', __filename, '--child', subject, String(workload.calls), String(workload.rounds)],
      { maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${subject} ${workload.calls}×${workload.rounds}: ${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as InProcessResult);
      },
    );
  });
}

function key(subject: InProcessSubject, workload: Workload): string {
  return `${subject}:${workload.calls}x${workload.rounds}`;
}

/**
 * How many times each in-process cell runs, the passes interleaved (every cell once, then again):
 * the speed of a shared machine drifts by tens of percent over a minute, and a ratio of two cells
 * measured a minute apart would carry that drift. A cell's figure is the median of its passes.
 */
const LOOP_PASSES = 5;

/** An in-process cell over its passes: the median pass (`perCallNs`), the fastest and the slowest. */
interface LoopCell extends InProcessResult {
  fastestPassNs: number;
  slowestPassNs: number;
}

async function loopResults(workloads: Workload[], subjects: InProcessSubject[]): Promise<Map<string, LoopCell>> {
  const passes = new Map<string, InProcessResult[]>();
  for (let pass = 1; pass <= LOOP_PASSES; pass++) {
    for (const workload of workloads) {
      for (const subject of subjects) {
        const result = await childResult(subject, workload);
        const cell = key(subject, workload);
        passes.set(cell, [...(passes.get(cell) ?? []), result]);
        process.stderr.write(`  pass ${pass}: ${subject} ${workload.calls}×${workload.rounds}: ${formatNs(result.perCallNs)} per call\n`);
      }
    }
  }
  const results = new Map<string, LoopCell>();
  for (const [cell, runs] of passes) {
    const perCall = runs.map((run) => run.perCallNs);
    results.set(cell, {
      ...runs[0],
      perCallNs: median(perCall),
      fastestPassNs: Math.min(...perCall),
      slowestPassNs: Math.max(...perCall),
      runs: runs.reduce((sum, run) => sum + run.runs, 0),
    });
  }
  return results;
}

function workloadName(workload: Workload): string {
  return workload.rounds === 1 ? `1 round × ${workload.calls} calls` : `${workload.rounds} rounds × ${workload.calls} call`;
}

function loopSection(results: Map<string, LoopCell>): string[] {
  const per = (subject: InProcessSubject, workload: Workload, pass: 'perCallNs' | 'fastestPassNs' | 'slowestPassNs' = 'perCallNs') =>
    results.get(key(subject, workload))?.[pass] ?? NaN;
  /** Per-call cost at 3,200 parallel calls ÷ at 100, from the cells' median or fastest passes. */
  const growthOf = (subject: InProcessSubject, pass: 'perCallNs' | 'fastestPassNs') =>
    per(subject, { calls: 3_200, rounds: 1 }, pass) / per(subject, { calls: 100, rounds: 1 }, pass);
  const growth = growthOf('harness', 'perCallNs');
  return [
    '## The agent loop alone, next to the AI SDK',
    '',
    'An in-process model answers each round in one chunk; the tool is a trivial `echo`. Harness runs',
    '`AgentLoop.execute` with the dispatcher as the server builds it (a one-hour deadline on every call,',
    "`HARNESS_TOOL_TIMEOUT_MS`'s default) and, to show what that deadline costs, without one; the AI SDK",
    `(\`ai\` ${aiVersion()}) runs \`generateText\` with its \`MockLanguageModelV3\` and \`stepCountIs(rounds + 1)\`.`,
    'Time per tool call: the median run divided by its calls, each cell in a process of its own. `echo` is',
    'not marked read-only, so Harness runs a round\'s calls one after the other (`runInTurns`); the AI SDK runs',
    `them all at once. Every cell ran ${LOOP_PASSES} times, the passes interleaved (a shared machine's speed drifts`,
    'over a minute); the table shows its median pass.',
    '',
    '| workload | Harness | Harness, no call deadline | AI SDK `generateText` | AI SDK ÷ Harness |',
    '|---|---|---|---|---|',
    ...LOOP_WORKLOADS.map(
      (workload) =>
        `| ${workloadName(workload)} | ${formatNs(per('harness', workload))} | ${formatNs(per('harness-no-deadline', workload))} | ${formatNs(per('ai-sdk', workload))} | ${ratio(per('ai-sdk', workload), per('harness', workload))} |`,
    ),
    '',
    `Linearity — per-call cost at 3,200 parallel calls ÷ at 100: Harness ${growth.toFixed(2)}× (target at most 1.5×: ` +
      `${growth <= 1.5 ? 'met' : 'NOT met'}); without the call deadline ${growthOf('harness-no-deadline', 'perCallNs').toFixed(2)}×; ` +
      `AI SDK ${growthOf('ai-sdk', 'perCallNs').toFixed(2)}×. From each cell's fastest pass instead: Harness ` +
      `${growthOf('harness', 'fastestPassNs').toFixed(2)}×, without the call deadline ${growthOf('harness-no-deadline', 'fastestPassNs').toFixed(2)}×, ` +
      `AI SDK ${growthOf('ai-sdk', 'fastestPassNs').toFixed(2)}×.`,
    '',
    'The same cell\'s figure moves from one process to the next here: in this run the 100-call cell of Harness',
    `took between ${formatNs(per('harness', { calls: 100, rounds: 1 }, 'fastestPassNs'))} and ` +
      `${formatNs(per('harness', { calls: 100, rounds: 1 }, 'slowestPassNs'))} per call across its passes (pinning a`,
    'process to one core does not remove the spread), and a ratio of two cells\' medians carries both cells\'',
    'luck. Disturbance only adds time, so the ratio of the fastest passes is the least disturbed reading; the',
    'target is judged on the medians.',
    '',
  ];
}

function aiVersion(): string {
  try {
    return (JSON.parse(fs.readFileSync(require.resolve('ai/package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '6';
  }
}

function serverSection(timings: ServerTiming[], results: Map<string, LoopCell>, baseline: ServerTiming[] | null): string[] {
  const rows = timings.map((timing) => {
    const { medianMs, p90Ms } = summarize(timing);
    if (timing.calls === 0) return { timing, medianMs, p90Ms, unit: '—', perNs: NaN, aiNs: NaN };
    const perRound = timing.rounds > 1;
    const perNs = (medianMs * 1e6) / (perRound ? timing.rounds : timing.calls);
    const aiNs = results.get(key('ai-sdk', { calls: perRound ? 1 : timing.calls, rounds: timing.rounds }))?.perCallNs ?? NaN;
    return { timing, medianMs, p90Ms, unit: perRound ? 'per round' : 'per call', perNs, aiNs };
  });
  const text = rows.find((row) => row.timing.calls === 0);
  const worst = Math.max(...rows.filter((row) => Number.isFinite(row.aiNs)).map((row) => row.perNs / row.aiNs));
  return [
    '## The whole server',
    '',
    'The real server process (`node dist/main.js`, the scripted model, a SQLite file in WAL mode, one',
    'WebSocket client watching), timed by the client from sending `POST /api/sessions/:id/messages` to',
    'receiving `message_end`; a new session for every run. The scripted model streams as a provider does',
    '(each tool call announced, then its arguments in up to three pieces; the chunks in network-sized',
    'reads of 8 KB, a turn of the event loop apart), so one `task_list` call is five events:',
    '`tool_call_start`, two `tool_call_args_delta`, `tool_call_result`, `activity`, each numbered, stored',
    'and sent. Each workload runs for 3 s before it is measured (the JIT). The AI SDK column is the loop',
    'section\'s, from the same run.',
    '',
    `| workload | runs | median | p90 | median per call (or round) | AI SDK loop, same workload | server ÷ AI SDK |${baseline ? ' baseline median |' : ''}`,
    `|---|---|---|---|---|---|---|${baseline ? '---|' : ''}`,
    ...rows.map((row, index) => {
      const before = baseline?.[index];
      return (
        `| ${row.timing.name} | ${row.timing.runsMs.length} | ${formatMs(row.medianMs)} | ${formatMs(row.p90Ms)} | ${Number.isFinite(row.perNs) ? `${formatNs(row.perNs)} ${row.unit}` : '—'} | ${Number.isFinite(row.aiNs) ? formatNs(row.aiNs) : '—'} | ${ratio(row.perNs, row.aiNs)} |` +
        (baseline ? ` ${before ? formatMs(summarize(before).medianMs) : 'n/a'} |` : '')
      );
    }),
    ...(baseline ? ['', `Baseline: ${BASELINE_NAME}, measured in the same run on the same workloads.`] : []),
    '',
    `Targets: the whole server per tool call at most 2.5× the AI SDK loop per call — worst ratio ${worst.toFixed(2)}× ` +
      `(${worst <= 2.5 ? 'met' : 'NOT met'}); a text-only answer at most 1 ms at the median — ${text ? formatMs(text.medianMs) : 'n/a'} ` +
      `(${text && text.medianMs <= 1 ? 'met' : 'NOT met'}).`,
    '',
  ];
}

function loadSection(load: LoadResult, sessions: number, baseline: LoadResult | null): string[] {
  const all = load.waves.flatMap((wave) => wave.latenciesMs);
  const first = load.waves[0];
  const last = load.waves[load.waves.length - 1];
  const growth = last.rssAfter / first.rssAfter;
  const p99 = percentile(all, 0.99);
  const problems = load.waves.flatMap((wave) => wave.problems);
  const baselineP99 = baseline ? percentile(baseline.waves.flatMap((wave) => wave.latenciesMs), 0.99) : null;
  return [
    '## Under load',
    '',
    `${sessions} sessions at once, each of its own user with its own WebSocket client, post a message at the`,
    'same moment; each run makes two rounds of realistic calls — 10 `write_file`; then `read_file` ×5,',
    '`glob`, `grep`, `edit_file`, `task_create` and a `read_file` that fails — then answers. Three identical',
    'waves, each with new sessions and connections, on one server process. Every session\'s events are',
    'checked: the expected number, `seq` from 1 without a gap, results in call order with their status, an',
    'activity after each result, `message_end` last. Latency: `POST` to `message_end`, per session. The',
    'server\'s memory (RSS) is read 2.5 s after each wave: a second after its last run the server collects the',
    'garbage of the burst and empties the database\'s page cache (its pooled grep threads stop after 30 s).',
    '',
    '| build | wave | events received / expected | sessions with a problem | p50 | p99 | max | wave took | server RSS after |',
    '|---|---|---|---|---|---|---|---|---|',
    ...[...(baseline ? [['baseline', baseline] as const] : []), ['this', load] as const].flatMap(([build, result]) =>
      result.waves.map(
        (wave) =>
          `| ${build} | ${wave.wave} | ${wave.events} / ${wave.expectedEvents} | ${wave.problems.length} | ${formatMs(median(wave.latenciesMs))} | ${formatMs(percentile(wave.latenciesMs, 0.99))} | ${formatMs(Math.max(...wave.latenciesMs))} | ${formatMs(wave.wallMs)} | ${formatBytes(wave.rssAfter)} |`,
      ),
    ),
    '',
    ...(baseline ? [`Baseline: ${BASELINE_NAME}, idle ${formatBytes(baseline.rssIdle)} before its first wave.`, ''] : []),
    `Idle server before the first wave: ${formatBytes(load.rssIdle)}. Targets: nothing lost or reordered — ` +
      `${problems.length === 0 ? 'met' : `NOT met (${problems.slice(0, 3).join(' | ')})`}; p99 over all waves at most 1.6 s (a quarter of ` +
      `the 6.5 s the issue measured) — ${formatMs(p99)} (${p99 <= 1_625 ? 'met' : 'NOT met'})` +
      (baselineP99 === null ? '' : `, and at most a quarter of the baseline's ${formatMs(baselineP99)} in this run — ${ratio(p99, baselineP99)} of it (${p99 <= baselineP99 / 4 ? 'met' : 'NOT met'})`) +
      `; memory after the last wave within 10% of its level after the first — ${ratio(last.rssAfter, first.rssAfter)} (${growth <= 1.1 ? 'met' : 'NOT met'}).`,
    '',
  ];
}

function loadAverage(): string {
  return os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' / ');
}

async function main(): Promise<void> {
  const onlyAt = process.argv.indexOf('--only');
  const only = new Set<Section>(onlyAt >= 0 ? (process.argv[onlyAt + 1] ?? '').split(',').filter((name): name is Section => (SECTIONS as readonly string[]).includes(name)) : SECTIONS);
  const startLoad = loadAverage();
  const started = new Date();
  const body: string[] = [];

  let loop = new Map<string, LoopCell>();
  if (only.has('loop')) {
    process.stderr.write('the agent loop alone, and the AI SDK\n');
    loop = await loopResults(LOOP_WORKLOADS, SUBJECTS);
    body.push(...loopSection(loop));
  }
  let serverPerCallNs: number | undefined;
  if (only.has('server')) {
    process.stderr.write('the whole server\n');
    if (!only.has('loop')) {
      loop = await loopResults([...SERVER_PARALLEL.map((calls) => ({ calls, rounds: 1 })), { calls: 1, rounds: ROUNDS }], ['ai-sdk']);
    }
    const options = { parallelCalls: SERVER_PARALLEL, rounds: ROUNDS, textRuns: 300, parallelRuns: 15, roundRuns: 10, warmupMs: 3_000 };
    const baseline = BASELINE ? await runServerBench({ ...options, main: BASELINE }) : null;
    const timings = await runServerBench(options);
    body.push(...serverSection(timings, loop, baseline));
    serverPerCallNs = Math.min(...timings.filter((timing) => timing.calls > 1).map((timing) => (summarize(timing).medianMs * 1e6) / timing.calls));
  }
  if (only.has('load')) {
    process.stderr.write('under load\n');
    const sessions = 100;
    const baseline = BASELINE ? await runLoadBench({ sessions, waves: 3, main: BASELINE }) : null;
    body.push(...loadSection(await runLoadBench({ sessions, waves: 3 }), sessions, baseline));
  }
  if (only.has('contract')) {
    process.stderr.write('the tool contract\n');
    body.push(...(await contractSections(serverPerCallNs)));
  }

  const cpus = os.cpus();
  const lines = [
    '# Performance',
    '',
    `Produced by \`npm run bench\` on ${started.toISOString().slice(0, 10)}: Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ` +
      `${formatBytes(os.totalmem())} of memory; load average (1 / 5 / 15 min) ${startLoad} at the start, ${loadAverage()} at the end.`,
    'The machine is shared: a load average above the core count means other work ran at the same time, and',
    'every number then moves, by ±10% or more between runs; the ratios are what the targets are about.',
    '',
    ...body,
    '## Reading the numbers',
    '',
    '- **The call deadline.** Each call\'s cancellation (`call-signal.ts`) is a plain object: the run\'s signal carries',
    '  one listener for all the calls in flight (not one per call: adding a listener to an `EventTarget` walks its',
    '  list), the deadlines of a dispatcher\'s calls share one unref\'d timer (they pass in the order the calls began),',
    '  and the `AbortSignal` the tool reads is only built when it reads it (on Node 20, building any `AbortSignal`, let',
    '  alone `AbortSignal.any` with `AbortSignal.timeout`, costs microseconds). So the two Harness columns are close.',
    '  A call waiting for its turn holds only its place (`runInTurns` builds its invocation and promises when it',
    '  starts), and results are applied from one table for the round (`RoundResults`). What still grows with the',
    '  calls of a round is garbage collection of what the round keeps until it ends — its calls, results and tool',
    '  messages, a few hundred bytes a call — which at 3,200 calls outlives V8\'s young generation. A heap snapshot',
    '  taken at the 3,000th call of a 3,200-call round holds, per call, only the call itself (`{id,type,function}`',
    '  and `{name,arguments}`, which the assistant message needs) and, once it finished, its tool message: nothing',
    '  else of the round is kept. The young generation\'s collections, which copy that growing set, cost about',
    '  0.45 ms of pause per 1,000 calls at 100 calls a round and 0.9 ms at 3,200; with a larger young generation',
    '  (`--max-semi-space-size=64`) the 3,200-call round costs 1.13× the 100-call one per call. The rest of the',
    '  growth is the same per-call work touching more memory. So the ratio of the medians lands between about',
    '  1.2× and 2.0× from one run to the next (the highest when other work shares the machine), on either side',
    '  of the target, and that of the fastest passes about 1.1–1.4×: target 1 is met when the host is quiet,',
    '  not reliably when it is busy.',
    '- **The whole server** pays, per tool call, five events (each numbered, stored in the session\'s event log and',
    '  sent), an activity row and a tool message; per commit of its group commit, one write to each WebSocket and',
    '  one WAL append (a worker thread checkpoints). The fixed cost of a run — the `POST`, its transaction, the',
    '  first model call — is what the text-only answer and the 100-call round show. Where a 100-call round\'s time',
    '  goes (a CPU profile of the server\'s main thread, the session\'s creation and start-up left out, each sample',
    '  counted once, in the innermost of these parts): Express and Nest for the run\'s two requests (the session\'s',
    '  creation and the `POST`) 19%, the frames\' socket writes (one a commit) 8%, the tool messages\' and the',
    '  activities\' rows 6% each, the run service around them 7%, garbage collection 5.5%, the dispatcher 5.4%, the',
    '  group commits 5.3%, the event log\'s numbering and JSON 5% and its rows 2%, the listener\'s and the',
    '  registry\'s share of the events 3% each, the loop itself some 7%, the scripted model 2.6%; the remaining',
    '  tenth is spread thin (promise hooks, microtasks). The scripted model hands the loop a network read at a',
    '  time (`LlmAdapter.streamReads`); read chunk by chunk, a step of an async iterator each, a call cost 41',
    '  promises in all; with that and the dispatcher\'s synchronous path for a synchronous tool, about 9.',
    '  What is left is per event: each of a call\'s five events is numbered, turned into JSON, stored and framed,',
    '  some 6–8 µs of the call\'s time here, so the whole server cannot come within 2.5× of a loop that keeps',
    '  nothing and sends nothing without dropping one of those (and the durable, replayable log with them).',
    '  On Node 20 every promise also pays for `AsyncLocalStorage`: once one is in use, a hook runs for every',
    '  promise the process makes, and each instance adds its own work to it. Replacing both of Harness\'s',
    '  (`ToolCallContext`, `ExecutionScope`) with a plain variable (wrong across awaits; a measurement only) made',
    '  the 100-call round some 8–10% faster and the first wave of the load about a tenth shorter, later waves 2%;',
    '  the two now share one instance (`scopeSlot`), which saved about 4% of the round. Tools read their call\'s',
    '  signal through `ToolCallContext`, so it stays; Node lines that back `AsyncLocalStorage` with',
    '  `AsyncContextFrame` instead of hooks remove the cost.',
    '  A text-only answer spends about 1.1 ms in the server, timed inside it on a quiet machine from the request',
    '  arriving to the last frame written: 0.25 ms before the handler (Express 0.04, the JSON body 0.085, Nest\'s',
    '  guard and pipes 0.11), 0.19 ms for the session\'s lookup and the `POST`\'s transaction (two rows and a',
    '  commit), 0.14 ms for the run\'s start up to the model call, 0.09 ms for Nest and Express to build the answer',
    '  and 0.05 ms to write it; then 0.18 ms for the model\'s seven chunks, which become eight events, 0.1 ms for',
    '  the group commit and 0.05 ms for the frames\' one write. No one step is more than a quarter of it. A CPU',
    '  profile gives some small ones much more than they cost run alone in a loop (the tool definitions offered',
    '  to the model: 6% of the streaming round there, under 1 µs a round alone; the event log\'s first lookup for',
    '  a session: 11% there, 6 µs alone). And this machine makes a request cost more the longer the server idled',
    '  before it: in one server, the same text-only run, interleaved, reached `message_end` in 1.41 ms when a',
    '  `GET /health` came just before the `POST`, 1.53 ms straight after the session\'s creation (the bench\'s',
    '  way), 1.65 ms after the client waited 1 ms without sleeping, and 2.48 ms when both had slept 5 ms before',
    '  it. Those step timings, taken with the timing code in place, add up to more than the whole median of a',
    '  quiet run. The bench\'s median follows the host: 0.79 ms in a run on a quiet host (the baseline 1.33 ms',
    '  in the same run), 1.40 ms in a run a few hours earlier, on a busy host, of a build with the same',
    '  text-only path (baseline 2.63 ms). The path is about 0.55–0.6× of the baseline\'s either way, so the',
    '  1 ms target is met when the host is quiet and missed when it is not; no one step of it is large.',
    '- **Under load** each session\'s calls follow one another (only a round\'s read-only calls overlap), and all',
    '  hundred runs of a wave end together, so the p99 is the wave\'s length: the time the server\'s main thread',
    '  takes for the work of all of them. The file tools make their system calls synchronously on the main',
    '  thread (`workspace-open.ts`), except the `open` that makes a new file, which goes to libuv\'s pool.',
    '  Through `fs/promises` every call went to the pool — about 115 per session (`open`, `fstat`, `read`,',
    '  `close`, `mkdir`…), each a submission that wakes a pool thread, which then often took the main thread\'s',
    '  core, and a promise and a callback on the way back: in a CPU profile of the main thread under the load',
    '  that hand-off was about a quarter of the samples. Alone on this machine, opening, `fstat`-ing, reading',
    '  and closing a small file costs the main thread 27–69 µs through `fs/promises` and 6–7 µs as',
    '  synchronous calls. Making an inode is the exception: ext4 takes 30–530 µs here for each new file or',
    '  directory (more when the host is busy), and the wave\'s thousand new files cost that wherever they are',
    '  made. Made synchronously they hold the event loop; made in the pool, the woken thread mostly runs on the',
    '  main thread\'s core and the main thread waits for it (in the profile the submissions take about as long',
    '  as the synchronous calls did), but the other sessions\' frames and rows go on meanwhile, so new files are',
    '  made in the pool. A missing directory is made synchronously, once per session, where from the pool',
    '  each of the round\'s ten `write_file` sent its own `mkdir` (nine of them failing). Three variants',
    '  interleaved, three runs each, in one half hour of a slow host: the first wave took 1.69–2.15 s with',
    '  new files and directories made in the pool, 1.64–1.79 s with directories made synchronously (this',
    '  build), 1.64–2.35 s with both made synchronously. The build before (every call through `fs/promises`)',
    '  and this one, interleaved three runs each half an hour later: waves of 1.64–2.60 s and 1.37–1.87 s. In a',
    '  quiet hour this build\'s waves were 0.9–1.3 s; what is left of the main thread\'s time is the events\'',
    '  storing and sending, the model\'s stream and the inodes.',
    '  The first wave meets a server whose code V8 has not optimised yet and is usually the longest.',
    '  TurboFan keeps busy in the later waves too: the idle reclaim\'s full garbage collection one second after',
    '  the last run frees the maps of the burst\'s objects, and the code optimised for them is thrown away',
    '  (`--trace-deopt`: "weak objects"), so each later wave optimises some 220 functions again; without that',
    '  collection memory after the third wave was 1.2× its level after the first (target 1.1×), so it stays.',
    '  The grep threads wait up to 30 s in the pool instead of being stopped one second after the last run and',
    '  started again by the next burst (about 0.25 s of CPU per wave for three threads). Running each',
    '  `read_file` and `write_file` as one job on a pool of worker threads was tried before (a prototype, not',
    '  kept): the waves were 15–25% shorter, for the hand-offs became one per call but the work moved to the',
    '  core the main thread shares with V8 and libuv. A larger young generation (`--max-semi-space-size` of',
    '  32 or 64 MB), fewer V8 helper threads (`--v8-pool-size=2`), `--single-threaded-gc`, `--max-opt=1`,',
    '  `--maglev` and a libuv pool of 1, 2 or 16 threads did not shorten the waves beyond the noise.',
    '  A `grep` sends the files it read to its thread together (batches of 256 K characters),',
    '  so it holds a thread for one message instead of for all its file reads: the hundred greps of a wave no',
    '  longer queue behind each other for the threads.',
    '- **Memory across waves.** Heap snapshots of the server after each of three waves hold the same: about',
    '  33 MB of live objects, so a finished session leaves nothing behind in the JavaScript heap. What grew was',
    '  native: SQLite\'s page cache, which better-sqlite3 builds to hold up to 16 MB and which fills with the',
    '  pages of a file that grows with every session. The server now empties it when it goes idle',
    '  (`shrink_memory`); what still moves the figure, by a few MB either way, is V8 and the allocator keeping',
    '  pages they no longer use.',
    '- **This machine** is a virtual machine inside another one: system calls and waking another process are',
    '  slow (an HTTP round trip between two sockets of the same process takes about 0.45 ms at the median), so',
    '  the file tools of the load, and every HTTP request and WebSocket write, cost several times what they',
    '  cost on a workstation. The in-process columns are much less affected.',
    '',
    '## Running it',
    '',
    '```sh',
    'npm run bench                                  # builds, prints this report (about five minutes)',
    'npm run bench -- --write docs/performance.md   # and writes it here',
    'npm run bench -- --only loop,server            # some sections: loop, server, load, contract',
    '```',
    '',
    'The benchmarks are never run by `npm test` (timings are not assertions). The whole-server and load',
    'sections start `dist/main.js`; `HARNESS_BENCH_SERVER=/path/to/main.js` measures another build instead,',
    '`HARNESS_BENCH_BASELINE=/path/to/main.js` another build beside it, in the same run',
    '(`HARNESS_BENCH_BASELINE_NAME` says what it is).',
    '',
  ];
  const report = lines.join('\n');
  console.log(report);
  const writeAt = process.argv.indexOf('--write');
  if (writeAt >= 0 && process.argv[writeAt + 1]) fs.writeFileSync(process.argv[writeAt + 1], report);
}

async function child(): Promise<void> {
  const [subject, calls, rounds] = process.argv.slice(process.argv.indexOf('--child') + 1);
  const result = await measureInProcess(subject as InProcessSubject, { calls: Number(calls), rounds: Number(rounds) });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

(process.argv.includes('--child') ? child() : main()).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
