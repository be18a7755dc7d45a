import type { ScriptedScenario } from '../harness/llm/scripted-llm-adapter';

/** First-message markers that pick the demo's scripts. */
export const DEMO_CLOUD = '[demo:cloud] Take notes, read them back, and try the MCP server.';
export const DEMO_RESTRICTED = '[demo:restricted] Write a file, although this session may only read.';
export const DEMO_LOCAL = '[demo:local] Inspect the project on my desktop.';

/** The scenario `npm run demo` runs, and the bundled one of `LLM_PROTOCOL=scripted`. */
export function demoScenario(): ScriptedScenario {
  return {
    rounds: [{ content: 'Hello from the scripted model. Set LLM_BASE_URL to talk to a real one.' }],
    scripts: [
      {
        match: '[demo:cloud]',
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
        match: '[demo:restricted]',
        rounds: [
          { toolCalls: [{ name: 'write_file', arguments: { path: 'out.txt', content: 'x' } }, { name: 'glob', arguments: { pattern: '**/*' } }] },
          { content: 'This session may not write files.' },
        ],
      },
      {
        match: '[demo:local]',
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
