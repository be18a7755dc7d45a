import { optionalString, requireString } from '../tool-arguments';
import type { ToolCapabilities } from '../tool';
import type { ToolOutput } from '../tool-output';
import { errorResult, jsonResult } from './json-result';
import { optionalTaskStatus, SessionTaskTool, TASK_ITEM_SCHEMA, TASK_STATUS_PROPERTY } from './session-task-tool';

/** `task_create {title, description?, status?}`: adds a task to the session's todo list. Result: `{"task"}`. */
export class TaskCreateTool extends SessionTaskTool {
  getName(): string {
    return 'task_create';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'Create a task', annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }, serverOnly: true };
  }

  getDescription(): string {
    return (
      "Add a task to this session's todo list, to plan and track multi-step work. New tasks are 'pending' " +
      'unless a status is given. Returns the created task with its id.'
    );
  }

  getInputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        title: { type: 'string', description: 'Short title of the task.' },
        description: { type: 'string', description: 'Optional details.' },
        status: TASK_STATUS_PROPERTY,
      },
      required: ['title'],
      additionalProperties: false,
    };
  }

  override getOutputSchema(): Record<string, unknown> {
    return { type: 'object', properties: { task: TASK_ITEM_SCHEMA }, required: ['task'] };
  }

  protected run(args: Record<string, unknown>, sessionId: number): ToolOutput {
    const title = requireString(args, 'title');
    if (!title.ok) return errorResult(title.error);
    const description = optionalString(args, 'description');
    if (!description.ok) return errorResult(description.error);
    const status = optionalTaskStatus(args);
    if (!status.ok) return errorResult(status.error);
    const task = this.store.create(sessionId, { title: title.value, description: description.value, status: status.value });
    return jsonResult({ task });
  }
}
