import type { ToolOutput } from '../tool-output';
import type { ToolCapabilities } from '../tool';
import { jsonResult } from './json-result';
import { SessionTaskTool, TASK_ITEM_SCHEMA } from './session-task-tool';

/** `task_list {}`: the session's todo list, oldest first. Result: `{"tasks":[...]}`. */
export class TaskListTool extends SessionTaskTool {
  getName(): string {
    return 'task_list';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'List tasks', annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false }, serverOnly: true };
  }

  getDescription(): string {
    return "List the tasks of this session's todo list with their ids and statuses.";
  }

  getInputSchema(): Record<string, unknown> {
    return { type: 'object', properties: {}, required: [], additionalProperties: false };
  }

  override getOutputSchema(): Record<string, unknown> {
    return { type: 'object', properties: { tasks: { type: 'array', items: TASK_ITEM_SCHEMA } }, required: ['tasks'] };
  }

  protected run(_args: Record<string, unknown>, sessionId: number): ToolOutput {
    return jsonResult({ tasks: this.store.list(sessionId) });
  }
}
