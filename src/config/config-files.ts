import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { LlmProtocol } from '../harness/llm/llm-adapter-facade';
import { defaultScenario } from '../harness/llm/scripted-default-scenario';
import { parseScenario, ScenarioError, type ScriptedScenario } from '../harness/llm/scripted-llm-adapter';
import { McpConfigError } from '../harness/mcp/mcp-errors';
import { parseMcpConfig, type McpServerConfig } from '../harness/mcp/mcp-server-config';
import { errorMessage } from '../harness/runtime/error-message';
import { ConfigError } from './config-error';

// The files that variables name, read and validated before the server starts, so that a bad one
// is a ConfigError naming the variable, the file and the field instead of a failure inside Nest.

/** The servers of the JSON file `HARNESS_MCP_CONFIG` names (relative to the working directory); none without it. */
export function readMcpServers(file: string | null): McpServerConfig[] {
  if (file === null) return [];
  const text = readConfigFile('HARNESS_MCP_CONFIG', file);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError('HARNESS_MCP_CONFIG', `${file}: not valid JSON (${errorMessage(error)})`);
  }
  try {
    return parseMcpConfig(json);
  } catch (error) {
    if (error instanceof McpConfigError) throw new ConfigError('HARNESS_MCP_CONFIG', `${file}: ${error.message}`);
    throw error;
  }
}

/**
 * The scenario of `LLM_SCRIPT`: inline JSON when it starts with `{`, else a JSON file's path.
 * It is read only when the server is scripted: a scenario nobody uses must not stop a server that
 * talks to a real provider, and the bundled scenario stands in.
 */
export function readScenario(protocol: LlmProtocol, value: string | null): ScriptedScenario {
  const script = protocol === 'scripted' ? value : null;
  if (script === null) return defaultScenario();
  const inline = script.startsWith('{');
  // A path that does not exist may be inline JSON that is not an object: say what the value can be.
  const text = inline ? script : readConfigFile('LLM_SCRIPT', script, " (LLM_SCRIPT is a scenario file's path, or inline JSON starting with '{')");
  try {
    return parseScenario(text);
  } catch (error) {
    if (!(error instanceof ScenarioError)) throw error;
    // A fault of the whole document has no field worth naming.
    const problem = error.field === 'scenario' ? error.detail : error.message;
    throw new ConfigError('LLM_SCRIPT', inline ? problem : `${script}: ${problem}`);
  }
}

/** The text of a file a variable names; a file that cannot be read is named with where it was looked for. */
function readConfigFile(variable: string, file: string, hint = ''): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    const absolute = path.resolve(file);
    const where = absolute === file ? file : `${file} (${absolute})`;
    throw new ConfigError(variable, `cannot read ${where}: ${fileErrorReason(error)}${hint}`);
  }
}

/** Why a file could not be read or reached, in words (`no such file`), else the system's message. */
export function fileErrorReason(error: unknown): string {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    default:
      return errorMessage(error);
  }
}
