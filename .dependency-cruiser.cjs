/**
 * The dependency rule of docs/architecture.md, checked by `npm test` (`npm run check:deps`).
 * Production code only: specs may reach across layers to set up what they test.
 *
 *   session (http, gateway) → session/run → session/ws, session/persistence → session (services)
 *        ↓
 *   harness/core (loop) → harness/tool (contract + dispatcher) → harness/mcp, harness/local,
 *   harness/tool/impl → harness/llm, harness/runtime (leaf)
 */
const HARNESS_CONTRACT = '^src/harness/tool/(tool|tool-descriptor|tool-invocation|tool-result|tool-output|attachment-store|tool-call-context|tool-arguments|tool-errors)[.]ts$';

module.exports = {
  forbidden: [
    {
      name: 'no-folder-cycles',
      comment: 'Folders depend one way: a folder never reaches back to one that depends on it.',
      severity: 'error',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-module-cycles',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'harness-below-session',
      comment: 'The harness knows nothing of HTTP, WebSocket or storage; the session layer sits on top.',
      severity: 'error',
      from: { path: '^src/harness/' },
      to: { path: '^src/session/' },
    },
    {
      name: 'dev-tools-outside-production',
      comment: 'The demo and the benchmark use the server, never the other way round.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(demo|bench)/' },
      to: { path: '^src/(demo|bench)/' },
    },
    {
      name: 'contract-is-a-leaf',
      comment: 'What a tool is, its descriptor, invocation and result sit below everything that implements or calls tools.',
      severity: 'error',
      from: { path: HARNESS_CONTRACT },
      to: { path: '^src/', pathNot: [HARNESS_CONTRACT, '^src/harness/llm/chat-request[.]ts$', '^src/harness/runtime/'] },
    },
    {
      name: 'runtime-is-a-leaf',
      severity: 'error',
      from: { path: '^src/harness/runtime/' },
      to: { path: '^src/', pathNot: '^src/harness/runtime/' },
    },
    {
      name: 'loop-depends-on-the-contract',
      comment: 'The loop dispatches through ToolInvocationDispatcher, not the concrete dispatcher or its executors.',
      severity: 'error',
      from: { path: '^src/harness/core/' },
      to: { path: ['^src/harness/tool/tool-dispatcher[.]ts$', '^src/harness/(local|mcp)/', '^src/harness/tool/impl/'] },
    },
    {
      name: 'executors-below-the-dispatcher',
      comment: 'MCP, LOCAL and the built-in tools implement the contract; only the dispatcher and the loop sit above them.',
      severity: 'error',
      from: { path: ['^src/harness/(local|mcp)/', '^src/harness/tool/impl/'] },
      to: { path: ['^src/harness/core/', '^src/harness/tool/tool-dispatcher[.]ts$'] },
    },
    {
      name: 'providers-are-a-leaf',
      severity: 'error',
      from: { path: '^src/harness/llm/' },
      to: { path: '^src/harness/(core|tool|mcp|local)/' },
    },
    {
      name: 'events-and-storage-below-runs',
      comment: 'Streaming output and persistence are used by runs and endpoints, never the reverse.',
      severity: 'error',
      from: { path: '^src/session/(ws|persistence)/' },
      to: { path: '^src/session/(run|http|gateway)/' },
    },
    {
      name: 'composition-on-top',
      comment: 'Nest modules (and main) wire the layers; nothing below them imports one.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['[.]module[.]ts$', '^src/main[.]ts$', '^src/(demo|bench)/'] },
      to: { path: '[.]module[.]ts$' },
    },
    {
      name: 'session-services-below-runs',
      comment: 'Sessions, their tools and errors are used by runs and endpoints, never the reverse.',
      severity: 'error',
      from: { path: '^src/session/service/' },
      to: { path: '^src/session/(run|http|gateway|ws)/' },
    },
    {
      name: 'runs-below-endpoints',
      severity: 'error',
      from: { path: '^src/session/run/' },
      to: { path: '^src/session/(http|gateway)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '([.]spec[.]ts$)|(/testing/)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
