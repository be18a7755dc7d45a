import { AsyncResource } from 'node:async_hooks';
import { BaseTool } from '../tool/tool';
import { isPlainObject } from '../tool/tool-arguments';
import { ToolCallContext, type ToolCallProgress } from '../tool/tool-call-context';
import type { ToolDescriptor } from '../tool/tool-descriptor';
import type { ToolOutput } from '../tool/tool-output';
import { errorObjectOutput } from './mcp-call-result';
import type { McpClientManager } from './mcp-client-manager';
import type { McpToolRef } from './mcp-tool-ref';
import { mcpToolName } from '../tool/mcp-tool-name';

/**
 * Offers one tool of an MCP server to the model. With a client manager the server runs it
 * (CLOUD); with `clientManager == null` the tool belongs to an MCP server of the desktop client,
 * which runs it (LOCAL), and this adapter only describes it and refuses to run it here.
 *
 * In CLOUD mode the call honours its `ToolCallContext`: the call's signal cancels the MCP request
 * (the server gets `notifications/cancelled`) and the server's progress notifications are
 * reported with `ToolCallContext.reportProgress`.
 *
 * It always answers with a `ToolOutput`: the server's result as `McpClientManager.callTool`
 * gives it, or, when it cannot run the tool here, an `isError` output (`errorObjectOutput`).
 */
export class McpToolAdapter extends BaseTool {
  private readonly name: string;
  private readonly inputSchema: Record<string, unknown>;

  constructor(
    private readonly ref: McpToolRef,
    private readonly clientManager: McpClientManager | null,
  ) {
    super();
    this.name = mcpToolName(ref.serverName, ref.toolName);
    this.inputSchema = toObjectSchema(ref.inputSchema);
  }

  getName(): string {
    return this.name;
  }

  getDescription(): string {
    return this.ref.description !== '' ? this.ref.description : `Tool '${this.ref.toolName}' of MCP server '${this.ref.serverName}'`;
  }

  getInputSchema(): Record<string, unknown> {
    return this.inputSchema;
  }

  /** Which server and tool this adapter stands for. */
  getRef(): McpToolRef {
    return this.ref;
  }

  /**
   * An MCP tool, run by the MCP server through the client manager (CLOUD) or, when the adapter was
   * built without one, by the desktop client (LOCAL). The constructor's `clientManager == null`
   * convention is the only thing that tells the two apart: if adapters are ever built another
   * way, this is the one place to change.
   */
  override getDescriptor(): ToolDescriptor {
    return {
      name: this.getName(),
      source: 'mcp',
      executor: this.clientManager ? 'mcp-server' : 'desktop',
      serverId: this.ref.serverId,
      originalName: this.ref.toolName,
      ...(this.ref.title !== undefined ? { title: this.ref.title } : {}),
      ...(this.ref.annotations !== undefined ? { annotations: { ...this.ref.annotations } } : {}),
      trusted: this.ref.trusted === true,
    };
  }

  protected override executeWithSession(
    argumentsJson: string,
    sessionId: number | null,
    _workspace: string | null,
  ): Promise<ToolOutput> {
    if (this.clientManager == null) {
      return Promise.resolve(errorObjectOutput(`MCP tool '${this.name}' runs on the desktop client, not on the server`));
    }
    if (sessionId == null) {
      // Clients are per session; without one there is no client to call through.
      return Promise.resolve(errorObjectOutput(`MCP tool '${this.name}' needs a session to run`));
    }
    // Progress notifications arrive in the connection's async context, not this call's: the sink
    // is bound here, where `ToolCallContext` still knows the call.
    const onProgress = AsyncResource.bind((progress: ToolCallProgress) => ToolCallContext.reportProgress(progress));
    return this.clientManager.callTool(sessionId, this.ref.serverId, this.ref.toolName, argumentsJson, {
      signal: ToolCallContext.signal(),
      onProgress,
    });
  }

  protected override executeWithWorkspace(argumentsJson: string, workspace: string | null): Promise<ToolOutput> {
    return this.executeWithSession(argumentsJson, null, workspace);
  }

  protected override executeImpl(argumentsJson: string): Promise<ToolOutput> {
    return this.executeWithSession(argumentsJson, null, null);
  }
}

/**
 * Providers require an object schema for function parameters; an MCP server should send one,
 * but a missing `type` or `properties` is repaired rather than passed on.
 */
function toObjectSchema(schema: object): Record<string, unknown> {
  if (!isPlainObject(schema)) return { type: 'object', properties: {} };
  if (schema.type !== undefined && schema.type !== 'object') return { type: 'object', properties: {} };
  return { ...schema, type: 'object', properties: isPlainObject(schema.properties) ? schema.properties : {} };
}
