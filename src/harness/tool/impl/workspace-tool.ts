import { BaseTool } from '../tool';
import type { ToolOutput } from '../tool-output';
import { parseToolArguments } from '../tool-arguments';
import { errorMessage } from '../../runtime/error-message';
import { errorResult } from './json-result';

/**
 * Base of the built-in tools that work on files of the session workspace. It settles what they
 * all share: no workspace → error, arguments that are not a JSON object → error, and an
 * unexpected exception → error result (a tool never throws at the dispatcher).
 */
export abstract class WorkspaceTool extends BaseTool {
  /** Does the work once the arguments are an object and a workspace is known. */
  protected abstract run(args: Record<string, unknown>, workspace: string): Promise<ToolOutput>;

  protected override async executeWithWorkspace(argumentsJson: string, workspace: string | null): Promise<ToolOutput> {
    if (workspace === null || workspace.trim() === '') {
      return errorResult(`${this.getName()} needs a workspace to run`);
    }
    const parsed = parseToolArguments(argumentsJson);
    if (!parsed.ok) return errorResult(parsed.error);
    try {
      return await this.run(parsed.args, workspace);
    } catch (error) {
      return errorResult(`${this.getName()} failed: ${errorMessage(error)}`);
    }
  }

  protected override executeImpl(_argumentsJson: string): ToolOutput {
    return errorResult(`${this.getName()} needs a workspace to run`);
  }
}
