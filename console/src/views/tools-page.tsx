import { useEffect, useState } from 'preact/hooks';
import type { HarnessApi } from '../api/harness-api';
import type { ToolAnnotations, ToolEntry } from '../api/wire';
import { hrefOf } from '../state/route';
import { usePageFocus } from './use-page-focus';

const ANNOTATION_NAMES: Record<keyof ToolAnnotations, string> = {
  readOnlyHint: 'read-only',
  destructiveHint: 'destructive',
  idempotentHint: 'idempotent',
  openWorldHint: 'open world',
};

const EXECUTOR_TEXT: Record<ToolEntry['executor'], string> = {
  server: 'runs on the server',
  desktop: 'runs on the desktop app',
  'mcp-server': 'runs on its MCP server',
};

/** `GET /api/tools`: the built-in tools, and with a session, its MCP tools as that session runs them. */
export function ToolsPage({ api, sessionId }: { api: HarnessApi; sessionId: number | null }) {
  const [tools, setTools] = useState<ToolEntry[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [filter, setFilter] = useState('');
  const heading = usePageFocus<HTMLHeadingElement>();

  useEffect(() => {
    api.tools(sessionId ?? undefined).then(setTools, (error: unknown) => setProblem(`The tools could not be loaded: ${error instanceof Error ? error.message : String(error)}`));
  }, [api, sessionId]);

  const needle = filter.trim().toLowerCase();
  const shown = tools?.filter((tool) => needle === '' || `${tool.name} ${tool.title ?? ''} ${tool.description}`.toLowerCase().includes(needle)) ?? [];

  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <h1 id="page-title" ref={heading} tabIndex={-1}>
          {sessionId === null ? 'Tools' : `Tools of session ${sessionId}`}
        </h1>
        {sessionId !== null && (
          <div class="actions">
            <a class="button secondary" href={hrefOf({ page: 'session', sessionId })}>
              Back to session {sessionId}
            </a>
          </div>
        )}
      </div>
      <p class="hint">
        {sessionId === null
          ? 'The built-in tools. A session’s page links to its own list, which adds the tools of its MCP servers.'
          : 'The built-in tools and the tools of this session’s MCP servers, where this session runs them.'}
      </p>
      <label for="tool-filter">Filter</label>
      <input id="tool-filter" type="search" value={filter} onInput={(event) => setFilter(event.currentTarget.value)} />
      {problem && (
        <p class="problem" role="alert">
          {problem}
        </p>
      )}
      {tools === null && !problem && <p>Loading…</p>}
      <p class="muted" role="status">
        {tools !== null && `${shown.length} of ${tools.length} tools`}
      </p>
      <ul class="tool-catalog">
        {shown.map((tool) => (
          <li key={tool.name}>
            <ToolEntryCard tool={tool} />
          </li>
        ))}
      </ul>
    </section>
  );
}

function ToolEntryCard({ tool }: { tool: ToolEntry }) {
  const annotations = Object.entries(tool.annotations ?? {}).filter(([, value]) => typeof value === 'boolean') as Array<[keyof ToolAnnotations, boolean]>;
  return (
    <article class="tool-entry" aria-labelledby={`tool-${tool.name}`}>
      <h2>
        <code id={`tool-${tool.name}`}>{tool.name}</code>
        {tool.title && <span class="tool-title"> {tool.title}</span>}
      </h2>
      <p class="badges">
        <span class={`badge source-${tool.source}`}>{tool.source === 'mcp' ? 'MCP' : 'built-in'}</span>
        <span class="badge">{EXECUTOR_TEXT[tool.executor]}</span>
        {tool.serverId !== undefined && <span class="badge">server {tool.serverId}</span>}
        {tool.originalName && tool.originalName !== tool.name && (
          <span class="badge">
            as <code>{tool.originalName}</code>
          </span>
        )}
        {tool.trusted !== undefined && <span class={`badge ${tool.trusted ? 'success' : 'warning'}`}>{tool.trusted ? 'trusted server' : 'untrusted server'}</span>}
        {tool.serverOnly && <span class="badge">server only</span>}
        {tool.writesFiles && <span class="badge">writes files</span>}
        {tool.runsCommands && <span class="badge warning">runs commands</span>}
      </p>
      {annotations.length > 0 && (
        <p class="badges">
          <span class="muted">{tool.trusted === false ? 'Hints (not counted: untrusted server):' : 'Hints:'}</span>{' '}
          {annotations.map(([name, value]) => (
            <span key={name} class="badge" title={`${name}: ${value}`}>
              {value ? ANNOTATION_NAMES[name] : `not ${ANNOTATION_NAMES[name]}`}
            </span>
          ))}
        </p>
      )}
      <p class="description">{tool.description}</p>
      <details>
        <summary>Input schema</summary>
        <pre>{JSON.stringify(tool.inputSchema, null, 2)}</pre>
      </details>
    </article>
  );
}
