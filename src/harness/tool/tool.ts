import type { ToolDescriptor } from './tool-descriptor';

/** The part of a built-in tool's descriptor the tool declares itself. */
export type ToolCapabilities = Omit<ToolDescriptor, 'name' | 'source' | 'executor' | 'serverId' | 'originalName' | 'trusted'>;
import type { ToolOutput } from './tool-output';

/**
 * What a tool returns: a bare string (the legacy form: the model reads it, and its status is
 * inferred by `normalizeToolResult`), or a `ToolOutput` whose parts and `isError` are facts.
 */
export type ToolReturn = string | ToolOutput;

/**
 * The tool interface every tool implements, the `BaseTool` arity chain that built-in tools
 * extend, and `callTool`, the compatibility entry that picks the arity for a caller.
 */

/** A tool the agent can call. */
export interface Tool {
  /** Name the model calls the tool by; unique within a registry. */
  getName(): string;
  /** One-paragraph description offered to the model. */
  getDescription(): string;
  /** JSON Schema (an object schema) of the arguments the tool accepts. */
  getInputSchema(): Record<string, unknown>;
  /** JSON Schema of the result, where the result is JSON; `null` when it is free text. */
  getOutputSchema(): Record<string, unknown> | null;
  /** Optional extra guidance appended to the system prompt when the tool is offered. */
  getToolPrompt?(): string;
  /**
   * Who the tool is, where it comes from and where it runs. Optional, so tools written against
   * the interface directly keep compiling; the dispatcher falls back to a built-in server tool.
   */
  getDescriptor?(): ToolDescriptor;
  /**
   * Runs the tool. The meaning of the optional arguments depends on how many are given
   * (see `BaseTool.execute`). A tool that knows its outcome returns a `ToolOutput`; a legacy
   * tool reports failure as a JSON object string with an `error` key; either may throw.
   */
  execute(argumentsJson: string, a?: unknown, b?: unknown, c?: unknown): ToolReturn | Promise<ToolReturn>;
}

/**
 * Base class of the built-in tools. `execute` reads meaning from its argument count:
 * `(args)`, `(args, workspace)`, `(args, sessionId, workspace)`,
 * `(args, sessionId, userId, workspace)`, and chains down
 * `executeWithUser → executeWithSession → executeWithWorkspace → executeImpl`.
 * A tool overrides the highest link it needs.
 */
export abstract class BaseTool implements Tool {
  /** `getDescriptor`'s answer, made on its first call. */
  private descriptor: ToolDescriptor | undefined;

  abstract getName(): string;
  abstract getDescription(): string;
  abstract getInputSchema(): Record<string, unknown>;

  getOutputSchema(): Record<string, unknown> | null {
    return null;
  }

  /**
   * Built-in tools run on the server and add what they declare in `capabilities`; tools that come
   * from elsewhere override this.
   */
  getDescriptor(): ToolDescriptor {
    // Asked for twice per call (scheduling, then dispatch): a tool's capabilities do not change,
    // so its descriptor is made once, and frozen since every caller shares it.
    this.descriptor ??= deepFreeze<ToolDescriptor>({ ...this.capabilities(), name: this.getName(), source: 'builtin', executor: 'server' });
    return this.descriptor;
  }

  /**
   * What the tool does to the world (`title`, `annotations`, `writesFiles`, …). Undeclared, a tool
   * is not taken for read-only: a session at `READ_ONLY` does not run it, and it has its round to
   * itself. Override to declare.
   */
  protected capabilities(): ToolCapabilities {
    return {};
  }

  execute(argumentsJson: string, a?: unknown, b?: unknown, c?: unknown): ToolReturn | Promise<ToolReturn> {
    switch (arguments.length) {
      case 0:
      case 1:
        return this.executeImpl(argumentsJson);
      case 2:
        return this.executeWithWorkspace(argumentsJson, asText(a));
      case 3:
        return this.executeWithSession(argumentsJson, asId(a), asText(b));
      default:
        return this.executeWithUser(argumentsJson, asId(a), asId(b), asText(c));
    }
  }

  protected executeWithUser(
    argumentsJson: string,
    sessionId: number | null,
    _userId: number | null,
    workspace: string | null,
  ): ToolReturn | Promise<ToolReturn> {
    return this.executeWithSession(argumentsJson, sessionId, workspace);
  }

  protected executeWithSession(
    argumentsJson: string,
    _sessionId: number | null,
    workspace: string | null,
  ): ToolReturn | Promise<ToolReturn> {
    return this.executeWithWorkspace(argumentsJson, workspace);
  }

  protected executeWithWorkspace(argumentsJson: string, _workspace: string | null): ToolReturn | Promise<ToolReturn> {
    return this.executeImpl(argumentsJson);
  }

  /** The bottom of the chain. Tools that need a workspace or a session never reach it with one. */
  protected executeImpl(_argumentsJson: string): ToolReturn | Promise<ToolReturn> {
    return JSON.stringify({ error: `${this.getName()} needs a session and a workspace to run` });
  }
}

function deepFreeze<T extends object>(value: T): T {
  for (const field of Object.values(value)) if (typeof field === 'object' && field !== null) deepFreeze(field as object);
  return Object.freeze(value);
}

function asText(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function asId(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * Compatibility entry that calls a tool with the arity its context allows:
 * ids given → 4 arguments; only a workspace → 2; nothing → 1.
 */
export function callTool(
  tool: Tool,
  argumentsJson: string,
  sessionId?: number | null,
  userId?: number | null,
  workspace?: string | null,
): ToolReturn | Promise<ToolReturn> {
  if (sessionId != null || userId != null) {
    return tool.execute(argumentsJson, sessionId ?? null, userId ?? null, workspace ?? null);
  }
  if (workspace != null) {
    return tool.execute(argumentsJson, workspace);
  }
  return tool.execute(argumentsJson);
}
