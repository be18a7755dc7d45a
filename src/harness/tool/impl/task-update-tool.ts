import { optionalString, requireInteger } from '../tool-arguments';
import type { ToolCapabilities } from '../tool';
import type { ToolOutput } from '../tool-output';
import { errorResult, jsonResult } from './json-result';
import { optionalTaskStatus, SessionTaskTool, TASK_ITEM_SCHEMA, TASK_STATUS_PROPERTY } from './session-task-tool';

/**
 * `task_update {task_id, title?, description?, status?}`: changes a task of the session's todo
 * list; at least one change must be given. Result: `{"task"}`.
 */
export class TaskUpdateTool extends SessionTaskTool {
  getName(): string {
    return 'task_update';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'Update a task', annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false }, serverOnly: true };
  }

  getDescription(): string {
    return "Change the title, description or status of a task in this session's todo list. Returns the updated task.";
  }

  getInputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        task_id: { type: 'integer', description: 'Id of the task, as returned by task_create or task_list.' },
        title: { type: 'string', description: 'New title.' },
        description: { type: 'string', description: 'New description.' },
        status: TASK_STATUS_PROPERTY,
      },
      required: ['task_id'],
      additionalProperties: false,
    };
  }

  override getOutputSchema(): Record<string, unknown> {
    return { type: 'object', properties: { task: TASK_ITEM_SCHEMA }, required: ['task'] };
  }

  protected run(args: Record<string, unknown>, sessionId: number): ToolOutput {
    const taskId = requireInteger(args, 'task_id');
    if (!taskId.ok) return errorResult(taskId.error);
    const title = optionalString(args, 'title');
    if (!title.ok) return errorResult(title.error);
    if (title.value === '') return errorResult("'title' must not be empty");
    const description = optionalString(args, 'description');
    if (!description.ok) return errorResult(description.error);
    const status = optionalTaskStatus(args);
    if (!status.ok) return errorResult(status.error);
    if (title.value === undefined && description.value === undefined && status.value === undefined) {
      return errorResult('nothing to update; give at least one of title, description, status');
    }
    const task = this.store.update(sessionId, taskId.value, {
      title: title.value,
      description: description.value,
      status: status.value,
    });
    if (!task) return errorResult(`no task with id ${taskId.value} in this session`);
    return jsonResult({ task });
  }
}
