import { runAiSdkOnce } from './ai-sdk-workload';
import { runLoopOnce, type Workload } from './loop-workload';
import { median } from './stats';

/** What runs a workload in the benchmark's child process. */
export type InProcessSubject = 'harness' | 'harness-no-deadline' | 'ai-sdk';

/** The server's default `HARNESS_TOOL_TIMEOUT_MS`: the dispatcher's deadline for every call. */
const SERVER_CALL_TIMEOUT_MS = 3_600_000;

export interface InProcessResult {
  subject: InProcessSubject;
  workload: Workload;
  /** Median over the measured runs of a run's time divided by its tool calls. */
  perCallNs: number;
  runs: number;
}

function runOnce(subject: InProcessSubject, workload: Workload): Promise<number> {
  switch (subject) {
    case 'harness':
      return runLoopOnce(workload, SERVER_CALL_TIMEOUT_MS);
    case 'harness-no-deadline':
      return runLoopOnce(workload, null);
    case 'ai-sdk':
      return runAiSdkOnce(workload);
  }
}

/**
 * Runs one workload again and again in this process — first for `warmupMs` (the JIT), then for
 * `measureMs` and at least `minRuns` runs — and answers the median time per tool call.
 */
export async function measureInProcess(subject: InProcessSubject, workload: Workload, warmupMs = 400, measureMs = 1_500, minRuns = 10): Promise<InProcessResult> {
  const calls = workload.calls * workload.rounds;
  for (let started = performance.now(), runs = 0; runs < 3 || performance.now() - started < warmupMs; runs++) await runOnce(subject, workload);
  const perCall: number[] = [];
  for (const started = performance.now(); perCall.length < minRuns || performance.now() - started < measureMs; ) {
    perCall.push((await runOnce(subject, workload)) / calls);
    if (perCall.length >= 5_000) break;
  }
  return { subject, workload, perCallNs: median(perCall), runs: perCall.length };
}
