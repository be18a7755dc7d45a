import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadHarnessConfig } from '../config/harness-config';
import { startHarness, type RunningHarness, type StartHarnessOptions } from '../main';

/** What a demo script runs the server with. */
export interface DemoServerOptions {
  /** The token of user 1. */
  token: string;
  /** The scripted model's scenario (`LLM_SCRIPT`). */
  scenario: unknown;
  /** The MCP servers' configuration (`HARNESS_MCP_CONFIG`'s file). */
  mcpConfig: { servers: Array<Record<string, unknown>> };
  /** Prefix of the scratch folder's name. */
  name: string;
  consoleDir?: StartHarnessOptions['consoleDir'];
}

/** A demo's server and its scratch folder; `close` stops the one and removes the other. */
export interface DemoServer {
  harness: RunningHarness;
  close(): Promise<void>;
}

/**
 * The whole backend in this process, as the demos run it: a free port on 127.0.0.1, an in-memory
 * database, workspaces in a throw-away folder, the cloud shell on, the scripted model, the Nest
 * logger silent.
 */
export async function startDemoServer(options: DemoServerOptions): Promise<DemoServer> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), `${options.name}-`));
  const mcpConfig = path.join(scratch, 'mcp.json');
  fs.writeFileSync(mcpConfig, JSON.stringify(options.mcpConfig));
  const config = loadHarnessConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    HARNESS_DB: ':memory:',
    HARNESS_WORKSPACE_ROOT: path.join(scratch, 'workspaces'),
    HARNESS_TOKENS: `${options.token}=1`,
    HARNESS_MCP_CONFIG: mcpConfig,
    HARNESS_CLOUD_SHELL: 'on',
    LLM_PROTOCOL: 'scripted',
    LLM_SCRIPT: JSON.stringify(options.scenario),
  });
  let harness: RunningHarness;
  try {
    harness = await startHarness(config, { logger: false, ...(options.consoleDir ? { consoleDir: options.consoleDir } : {}) });
  } catch (error) {
    fs.rmSync(scratch, { recursive: true, force: true });
    throw error;
  }
  return {
    harness,
    close: async () => {
      try {
        await harness.close();
      } finally {
        fs.rmSync(scratch, { recursive: true, force: true });
      }
    },
  };
}
