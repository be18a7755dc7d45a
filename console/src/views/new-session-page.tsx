import { useEffect, useState } from 'preact/hooks';
import type { HarnessApi } from '../api/harness-api';
import { EXECUTION_MODES, PERMISSION_LEVELS, type ExecutionMode, type NewSession, type PermissionLevel, type ToolEntry } from '../api/wire';
import { hrefOf } from '../state/route';
import { usePageFocus } from './use-page-focus';

const MODE_HELP: Record<ExecutionMode, string> = {
  CLOUD: 'Tools run on the server, in the session’s workspace.',
  LOCAL: 'Tools run on the desktop app of this user, which must be connected.',
};

const LEVEL_HELP: Record<PermissionLevel, string> = {
  READ_ONLY: 'Read-only tools run; in CLOUD anything else is refused (in LOCAL the desktop asks).',
  READ_WRITE: 'Reads and changes workspace files freely; shell, destructive tools and tools of untrusted MCP servers ask for approval.',
  SMART: 'As READ_WRITE, but shell commands ask only when judged dangerous.',
  FULL: 'Nothing asks for approval.',
};

/** Creates a session (mode, permission level, tools, MCP servers, workspace), then opens it. */
export function NewSessionPage({ api }: { api: HarnessApi }) {
  const [mode, setMode] = useState<ExecutionMode>('CLOUD');
  const [level, setLevel] = useState<PermissionLevel>('READ_WRITE');
  const [builtins, setBuiltins] = useState<ToolEntry[] | null>(null);
  const [allTools, setAllTools] = useState(true);
  const [chosen, setChosen] = useState<ReadonlySet<string>>(new Set());
  const [mcpServers, setMcpServers] = useState('');
  const [workspace, setWorkspace] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const heading = usePageFocus<HTMLHeadingElement>();

  useEffect(() => {
    api.tools().then(
      (tools) => {
        setBuiltins(tools);
        setChosen(new Set(tools.map((tool) => tool.name)));
      },
      () => setBuiltins([]),
    );
  }, [api]);

  const toggle = (name: string, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(name);
    else next.delete(name);
    setChosen(next);
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    const servers = parseServerIds(mcpServers);
    if (servers === null) {
      setProblem('MCP servers: give server ids as numbers separated by commas, e.g. 1, 2.');
      return;
    }
    const body: NewSession = { executionMode: mode, permissionLevel: level };
    if (!allTools) body.tools = [...chosen];
    if (servers.length > 0) body.mcpServers = servers;
    if (workspace.trim() !== '') body.workspace = workspace.trim();
    setCreating(true);
    setProblem(null);
    try {
      const session = await api.createSession(body);
      location.hash = hrefOf({ page: 'session', sessionId: session.id });
    } catch (error) {
      setProblem(`The session was not created: ${error instanceof Error ? error.message : String(error)}`);
      setCreating(false);
    }
  };

  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <h1 id="page-title" ref={heading} tabIndex={-1}>
          New session
        </h1>
      </div>
      <form class="card new-session" onSubmit={submit}>
        <fieldset>
          <legend>Where tools run</legend>
          {EXECUTION_MODES.map((value) => (
            <label class="choice" key={value}>
              <input type="radio" name="mode" value={value} checked={mode === value} onChange={() => setMode(value)} />
              <span>
                <strong>{value}</strong> — {MODE_HELP[value]}
              </span>
            </label>
          ))}
        </fieldset>
        <label for="permission-level">Permission level</label>
        <select id="permission-level" value={level} onChange={(event) => setLevel(event.currentTarget.value as PermissionLevel)} aria-describedby="level-help">
          {PERMISSION_LEVELS.map((value) => (
            <option key={value} value={value}>
              {value}
            </option>
          ))}
        </select>
        <p id="level-help" class="hint">
          {LEVEL_HELP[level]}
        </p>
        <fieldset>
          <legend>Tools</legend>
          <label class="choice">
            <input type="checkbox" checked={allTools} onChange={(event) => setAllTools(event.currentTarget.checked)} />
            <span>Every tool, built-in and MCP</span>
          </label>
          {!allTools && builtins && (
            <div class="tool-choices">
              {builtins.map((tool) => (
                <label class="choice" key={tool.name}>
                  <input type="checkbox" checked={chosen.has(tool.name)} onChange={(event) => toggle(tool.name, event.currentTarget.checked)} />
                  <code>{tool.name}</code>
                </label>
              ))}
            </div>
          )}
        </fieldset>
        <label for="mcp-servers">MCP servers</label>
        <input id="mcp-servers" inputMode="numeric" value={mcpServers} onInput={(event) => setMcpServers(event.currentTarget.value)} aria-describedby="mcp-help" />
        <p id="mcp-help" class="hint">
          Ids from the server’s MCP configuration (<code>HARNESS_MCP_CONFIG</code>), separated by commas. Leave empty for none.
        </p>
        <label for="workspace">Workspace</label>
        <input id="workspace" value={workspace} onInput={(event) => setWorkspace(event.currentTarget.value)} aria-describedby="workspace-help" />
        <p id="workspace-help" class="hint">
          A folder name; sessions that name the same workspace share its files. Leave empty for a new one.
        </p>
        {problem && (
          <p class="problem" role="alert">
            {problem}
          </p>
        )}
        <div class="actions">
          <button type="submit" disabled={creating}>
            {creating ? 'Creating…' : 'Create session'}
          </button>
          <a class="button secondary" href={hrefOf({ page: 'sessions' })}>
            Cancel
          </a>
        </div>
      </form>
    </section>
  );
}

/** `"1, 2"` → `[1, 2]`; empty → `[]`; anything else → null. */
function parseServerIds(text: string): number[] | null {
  const parts = text.split(',').map((part) => part.trim()).filter((part) => part !== '');
  if (!parts.every((part) => /^\d{1,9}$/.test(part))) return null;
  return [...new Set(parts.map(Number))];
}
