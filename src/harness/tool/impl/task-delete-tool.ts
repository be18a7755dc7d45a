import { requireInteger } from '../tool-arguments';
import type { ToolCapabilities } from '../tool';
import type { ToolOutput } from '../tool-output';
import { errorResult, jsonResult } from './json-result';
import { SessionTaskTool } from './session-task-tool';

/** `task_delete {task_id}`: removes a task from the session's todo list. Result: `{"deleted": id}`. */
export class TaskDeleteTool extends SessionTaskTool {
  getName(): string {
    return 'task_delete';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'Delete a task', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }, serverOnly: true };
  }

  getDescription(): string {
    return "Remove a task from this session's todo list. To mark a task done, use task_update with status 'completed' instead.";
  }

  getInputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        task_id: { type: 'integer', description: 'Id of the task to remove.' },
      },
      required: ['task_id'],
      additionalProperties: false,
    };
  }

  override getOutputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: { deleted: { type: 'integer', description: 'Id of the removed task.' } },
      required: ['deleted'],
    };
  }

  protected run(args: Record<string, unknown>, sessionId: number): ToolOutput {
    const taskId = requireInteger(args, 'task_id');
    if (!taskId.ok) return errorResult(taskId.error);
    if (!this.store.delete(sessionId, taskId.value)) {
      return errorResult(`no task with id ${taskId.value} in this session`);
    }
    return jsonResult({ deleted: taskId.value });
  }
}
