import * as path from 'node:path';
import type { ScriptedScenario } from '../harness/llm/scripted-llm-adapter';

/**
 * The scripted sessions the web console's browser tests and screenshots drive: a session whose
 * first message carries one of these markers gets that script.
 */
export const CONSOLE_MARKERS = {
  /** Several rounds of tools: files, a search, an MCP tool that returns an image. */
  tools: '[console:tools]',
  /** A short MCP call with progress, then one that works for two minutes (for reload and cancel). */
  slow: '[console:slow]',
  /** A `shell` call, which needs approval at READ_WRITE. */
  approve: '[console:approve]',
  /** Questions for the user (`ask_user_questions`). */
  ask: '[console:ask]',
} as const;

/** The texts the scripts stream, for tests to look for. */
export const CONSOLE_TEXTS = {
  toolsStart: 'I will set up a notes file and look around.',
  toolsThinking: 'The notes are there: read them back, then fetch the screenshot.',
  toolsDone: 'Done: the notes are written and read back, and the screenshot is above.',
  slowStart: 'Starting with a short warm-up.',
  slowMain: 'Warm-up done; now the main job, which takes a while.',
  slowDone: 'The main job finished.',
  approveStart: 'I need to run one command to check the build.',
  approveCommand: 'echo build checked by the console',
  approveDone: 'Carrying on after the command.',
  askDone: 'Thanks, I have your answers.',
  askColour: 'Which colour should the chart use?',
  askTitle: 'What title should it have?',
} as const;

/** The MCP servers of the console's scripts: their ids, for a session's `mcpServers`. */
export const CONSOLE_MCP_SERVER_IDS = { content: 2, slow: 3 } as const;

/** The longest `mcp__slow__work` call of the slow script: longer than any test waits. */
const MAIN_JOB_MS = 120_000;

/** The scripted scenario (`LLM_SCRIPT`) with the console's scripts. */
export function consoleScenario(): ScriptedScenario {
  return {
    rounds: [{ content: 'Hello from the scripted model.' }],
    scripts: [
      {
        match: CONSOLE_MARKERS.tools,
        rounds: [
          {
            content: CONSOLE_TEXTS.toolsStart,
            toolCalls: [{ name: 'write_file', arguments: { path: 'notes.md', content: '# Notes\n\n- alpha\n- beta\n' } }],
          },
          {
            thinking: CONSOLE_TEXTS.toolsThinking,
            toolCalls: [
              { name: 'read_file', arguments: { path: 'notes.md' } },
              { name: 'glob', arguments: { pattern: '**/*.md' } },
              { name: 'mcp__content__pixel', arguments: { caption: 'A screenshot of the build page' } },
            ],
          },
          { content: CONSOLE_TEXTS.toolsDone },
        ],
      },
      {
        match: CONSOLE_MARKERS.slow,
        rounds: [
          { content: CONSOLE_TEXTS.slowStart, toolCalls: [{ name: 'mcp__slow__work', arguments: { ms: 1_500, progressEveryMs: 100, label: 'warm-up' } }] },
          { content: CONSOLE_TEXTS.slowMain, toolCalls: [{ name: 'mcp__slow__work', arguments: { ms: MAIN_JOB_MS, progressEveryMs: 250, label: 'main' } }] },
          { content: CONSOLE_TEXTS.slowDone },
        ],
      },
      {
        match: CONSOLE_MARKERS.approve,
        rounds: [
          { content: CONSOLE_TEXTS.approveStart, toolCalls: [{ name: 'shell', arguments: { command: CONSOLE_TEXTS.approveCommand } }] },
          { content: CONSOLE_TEXTS.approveDone },
        ],
      },
      {
        match: CONSOLE_MARKERS.ask,
        rounds: [
          {
            toolCalls: [
              {
                name: 'ask_user_questions',
                arguments: { questions: [{ question: CONSOLE_TEXTS.askColour, options: ['red', 'blue'] }, { question: CONSOLE_TEXTS.askTitle }] },
              },
            ],
          },
          { content: CONSOLE_TEXTS.askDone },
        ],
      },
    ],
  };
}

/**
 * The MCP config file's content for the console's scripts: the content server (images) and the
 * slow server (progress, cancellation), run with `node` from `demoDir` (`build/dev/demo`).
 */
export function consoleMcpConfig(demoDir: string): { servers: Array<Record<string, unknown>> } {
  return {
    servers: [
      { id: CONSOLE_MCP_SERVER_IDS.content, name: 'content', type: 'stdio', command: process.execPath, args: [path.join(demoDir, 'mcp-content-server.js')] },
      { id: CONSOLE_MCP_SERVER_IDS.slow, name: 'slow', type: 'stdio', command: process.execPath, args: [path.join(demoDir, 'mcp-slow-server.js')] },
    ],
  };
}
