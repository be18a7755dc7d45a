import * as path from 'node:path';
import WebSocket from 'ws';
import type { RunningHarness } from '../main';
import { startDemoServer } from './demo-server';
import { DEMO_CLOUD, DEMO_CONTENT, DEMO_LOCAL, DEMO_RESTRICTED, demoScenario } from './demo-scenario';

/**
 * `npm run demo`: the whole backend in one process on a free port, with a throw-away database and
 * workspace, the example MCP server, a real WebSocket client that also plays the desktop app,
 * and a scripted model. Prints every tool result and activity, exits non-zero if a run fails.
 */

const TOKEN = 'demo-token';

interface WsEvent {
  type: string;
  sessionId: number | null;
  data: Record<string, unknown>;
}

interface ResultRow {
  session: string;
  tool: string;
  status: string;
  summary: string;
  /** What the model read, in characters (a long result is cut to its budget). */
  modelChars: number;
  /** Stored binary parts: an image, the whole text of a budgeted result. */
  attachments: string;
}

async function main(): Promise<number> {
  const server = await startDemoServer({
    token: TOKEN,
    scenario: demoScenario(),
    name: 'harness-demo',
    mcpConfig: {
      servers: [
        { id: 1, name: 'demo', type: 'stdio', command: process.execPath, args: [path.join(__dirname, 'mcp-demo-server.js')] },
        { id: 2, name: 'content', type: 'stdio', command: process.execPath, args: [path.join(__dirname, 'mcp-content-server.js')] },
      ],
    },
  });
  const { harness } = server;
  console.log(`harness listening on ${harness.url}`);
  const client = await connect(harness);
  try {
    const rows: ResultRow[] = [];
    const failures: string[] = [];
    const runs: Array<[string, Record<string, unknown>, string]> = [
      ['cloud', { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [1] }, DEMO_CLOUD],
      ['restricted', { executionMode: 'CLOUD', permissionLevel: 'FULL', tools: ['read_file', 'glob'] }, DEMO_RESTRICTED],
      ['local', { executionMode: 'LOCAL', permissionLevel: 'READ_WRITE' }, DEMO_LOCAL],
      ['content', { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [2] }, DEMO_CONTENT],
    ];
    const activities: Array<Record<string, unknown>> = [];
    for (const [label, body, message] of runs) {
      const session = (await api(harness, 'POST', '/api/sessions', body)) as { id: number };
      const outcome = await runSession(harness, client, session.id, message);
      rows.push(...outcome.results.map((row) => ({ session: label, ...row })));
      if (outcome.error) failures.push(`${label}: ${outcome.error}`);
      const stored = (await api(harness, 'GET', `/api/sessions/${session.id}/activities`)) as Array<Record<string, unknown>>;
      activities.push(...stored.map((activity) => ({ session: label, ...activity })));
      if (stored.length !== outcome.results.length) {
        failures.push(`${label}: ${outcome.results.length} tool results but ${stored.length} activities`);
      }
    }
    console.log('\nTool call results (as WebSocket clients see them)');
    printTable(
      ['session', 'tool', 'status', 'summary', 'model read', 'attachments'],
      rows.map((row) => [row.session, row.tool, row.status, row.summary, `${row.modelChars} chars`, row.attachments]),
    );
    console.log('\nActivities (GET /api/sessions/:id/activities)');
    printTable(
      ['session', 'tool', 'status', 'target', 'durationMs'],
      activities.map((a) => [String(a.session), String(a.toolName), String(a.status), String(a.target), a.durationMs === undefined ? '' : String(a.durationMs)]),
    );
    if (failures.length > 0) {
      console.error(`\nThe demo failed:\n- ${failures.join('\n- ')}`);
      return 1;
    }
    console.log(`\n${rows.length} tool calls in ${runs.length} sessions; every run completed.`);
    return 0;
  } finally {
    client.close();
    await server.close();
  }
}

async function api(harness: RunningHarness, method: string, route: string, body?: unknown): Promise<unknown> {
  const response = await fetch(harness.url + route, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const payload: unknown = await response.json();
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${JSON.stringify(payload)}`);
  return payload;
}

function connect(harness: RunningHarness): Promise<WebSocket> {
  const socket = new WebSocket(`${harness.url.replace('http', 'ws')}/ws?token=${TOKEN}`);
  // The demo's desktop-client stand-in: it answers every LOCAL tool request itself.
  socket.on('message', (raw) => {
    const event = JSON.parse(raw.toString()) as WsEvent;
    if (event.type !== 'tool_request') return;
    const request = event.data as { requestId: string; toolName: string; arguments: string; needApproval: boolean };
    socket.send(JSON.stringify({ type: 'tool_response', sessionId: event.sessionId, requestId: request.requestId, result: desktopAnswer(request) }));
  });
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });
}

function desktopAnswer(request: { toolName: string; arguments: string; needApproval: boolean }): string {
  if (request.toolName === 'read_file') return 'Contents of a file on the desktop.\n';
  if (request.toolName === 'shell') {
    // The stand-in approves what it is asked to approve, and says so in the output.
    return JSON.stringify({ exit_code: 0, stdout: request.needApproval ? 'approved on the desktop; ran fine\n' : 'ran fine\n', stderr: '' });
  }
  return JSON.stringify({ error: `the desktop stand-in does not implement ${request.toolName}` });
}

async function runSession(
  harness: RunningHarness,
  socket: WebSocket,
  sessionId: number,
  content: string,
): Promise<{ results: Array<Omit<ResultRow, 'session'>>; error: string | null }> {
  const results: Array<Omit<ResultRow, 'session'>> = [];
  let executionId: string | null = null;
  const buffered: WsEvent[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish('the run did not end within 60 s'), 60_000);
    const onEvent = (event: WsEvent) => {
      if (event.sessionId !== sessionId || event.data.executionId !== executionId) return;
      if (event.type === 'tool_call_result') {
        const attachments = (event.data.attachments as Array<{ mediaType: string; bytes: number }> | undefined) ?? [];
        results.push({
          tool: String(event.data.tool_name),
          status: String(event.data.status),
          summary: String(event.data.summary ?? ''),
          modelChars: String(event.data.result ?? '').length,
          attachments: attachments.map((a) => `${a.mediaType.split(';')[0]} ${a.bytes} B`).join(', '),
        });
      } else if (event.type === 'message_end') {
        finish(null);
      } else if (event.type === 'error') {
        finish(String(event.data.message));
      }
    };
    const onMessage = (raw: WebSocket.RawData) => {
      const event = JSON.parse(raw.toString()) as WsEvent;
      if (executionId === null) buffered.push(event);
      else onEvent(event);
    };
    function finish(error: string | null) {
      clearTimeout(timer);
      socket.off('message', onMessage);
      resolve({ results, error });
    }
    socket.on('message', onMessage);
    api(harness, 'POST', `/api/sessions/${sessionId}/messages`, { content })
      .then((answer) => {
        executionId = (answer as { executionId: string }).executionId;
        buffered.splice(0).forEach(onEvent);
      })
      .catch((error: unknown) => {
        clearTimeout(timer);
        socket.off('message', onMessage);
        reject(error);
      });
  });
}

function printTable(header: string[], rows: string[][]): void {
  const clip = (text: string) => (text.length > 70 ? `${text.slice(0, 67)}...` : text).replace(/\s+/g, ' ');
  const cells = [header, ...rows.map((row) => row.map(clip))];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => row[column].length)));
  const line = (row: string[]) => row.map((cell, column) => cell.padEnd(widths[column])).join('  ');
  console.log(line(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const row of cells.slice(1)) console.log(line(row));
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
