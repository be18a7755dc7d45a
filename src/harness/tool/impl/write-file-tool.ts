import { requireString } from '../tool-arguments';
import type { ToolCapabilities } from '../tool';
import type { ToolOutput } from '../tool-output';
import { describeFsError } from './fs-error-message';
import { errorResult, jsonResult } from './json-result';
import { openWorkspaceFile } from './regular-file';
import { WorkspaceTool } from './workspace-tool';

/**
 * `write_file {path, content}`: creates or overwrites a workspace file, creating missing parent
 * directories (inside the workspace). Result: `{"path","bytes"}` with the workspace-relative path
 * and the UTF-8 size written.
 */
export class WriteFileTool extends WorkspaceTool {
  getName(): string {
    return 'write_file';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'Write file', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }, writesFiles: true };
  }

  getDescription(): string {
    return (
      'Create or overwrite a file in the workspace with the given content. Missing parent directories ' +
      'are created. To change part of an existing file prefer edit_file.'
    );
  }

  getInputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'File path relative to the workspace root.' },
        content: { type: 'string', description: 'The complete new content of the file.' },
      },
      required: ['path', 'content'],
      additionalProperties: false,
    };
  }

  override getOutputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'The written file, relative to the workspace root.' },
        bytes: { type: 'integer', description: 'Size of the written content in bytes (UTF-8).' },
      },
      required: ['path', 'bytes'],
    };
  }

  protected async run(args: Record<string, unknown>, workspace: string): Promise<ToolOutput> {
    const pathArg = requireString(args, 'path');
    if (!pathArg.ok) return errorResult(pathArg.error);
    const content = requireString(args, 'content', { allowEmpty: true });
    if (!content.ok) return errorResult(content.error);

    // Missing parent directories are made on the way, inside the directories already opened.
    const target = await openWorkspaceFile(workspace, pathArg.value, 'create', {
      workspaceError: 'path must name a file, not the workspace itself',
    });
    if (!target.ok) return errorResult(target.error);
    try {
      target.handle.writeText(content.value);
    } catch (error) {
      return errorResult(describeFsError(error, target.shown));
    } finally {
      target.handle.close();
    }
    return jsonResult({ path: target.shown, bytes: Buffer.byteLength(content.value, 'utf8') });
  }
}
