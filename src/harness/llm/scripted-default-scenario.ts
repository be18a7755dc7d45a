import type { ScriptedScenario } from './scripted-llm-adapter';

/**
 * The markers that pick the default scenario's scripts: a session whose first user message
 * contains one gets that script (`npm run demo` sends them); any other session gets the greeting.
 */
export const DEFAULT_SCENARIO_MARKERS = {
  cloud: '[demo:cloud]',
  restricted: '[demo:restricted]',
  local: '[demo:local]',
  content: '[demo:content]',
} as const;

/**
 * The scenario `LLM_PROTOCOL=scripted` answers with when `LLM_SCRIPT` names none: a greeting for
 * any session, and the demo's scripted sessions (tools of every kind, MCP, LOCAL) for the
 * sessions whose first message contains one of {@link DEFAULT_SCENARIO_MARKERS}.
 */
export function defaultScenario(): ScriptedScenario {
  return {
    rounds: [{ content: 'Hello from the scripted model. Set LLM_BASE_URL to talk to a real one.' }],
    scripts: [
      {
        match: DEFAULT_SCENARIO_MARKERS.cloud,
        rounds: [
          { content: 'I will write the notes first.', toolCalls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'alpha\nbeta\n' } }] },
          {
            thinking: 'Read it back, then exercise every kind of result.',
            toolCalls: [
              { name: 'read_file', arguments: { path: 'notes.txt' } },
              { name: 'read_file', arguments: { path: 'missing.txt' } },
              { name: 'shell', arguments: { command: 'echo checking; exit 3' } },
              { name: 'mcp__demo__echo', arguments: { text: 'hello over MCP' } },
              { name: 'mcp__demo__fail', arguments: { reason: 'the demo asked for it' } },
              { name: 'mcp__demo__stats', arguments: { numbers: [1, 2, 3, 4] } },
              { name: 'no_such_tool', arguments: {} },
            ],
          },
          { content: 'Notes written and read back; the MCP server answered.' },
        ],
      },
      {
        match: DEFAULT_SCENARIO_MARKERS.restricted,
        rounds: [
          { toolCalls: [{ name: 'write_file', arguments: { path: 'out.txt', content: 'x' } }, { name: 'glob', arguments: { pattern: '**/*' } }] },
          { content: 'This session may not write files.' },
        ],
      },
      {
        match: DEFAULT_SCENARIO_MARKERS.content,
        rounds: [
          {
            toolCalls: [
              { name: 'mcp__content__pixel', arguments: { caption: 'a screenshot, one pixel wide' } },
              { name: 'mcp__content__large_text', arguments: { bytes: 200_000 } },
            ],
          },
          { content: 'I saw the image, and read the head and tail of the long output.' },
        ],
      },
      {
        match: DEFAULT_SCENARIO_MARKERS.local,
        rounds: [
          {
            toolCalls: [
              { name: 'read_file', arguments: { path: 'README.md' } },
              { name: 'shell', arguments: { command: 'npm test' } },
              { name: 'task_create', arguments: { title: 'Review the desktop project' } },
            ],
          },
          { content: 'The desktop ran the tools; the task list lives on the server.' },
        ],
      },
    ],
  };
}
