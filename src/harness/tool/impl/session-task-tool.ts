import { BaseTool } from '../tool';
import type { ToolOutput } from '../tool-output';
import { optionalString, parseToolArguments, type ArgumentResult } from '../tool-arguments';
import { errorMessage } from '../../runtime/error-message';
import { errorResult } from './json-result';
import { TASK_STATUSES, type TaskStatus, type TaskStore } from './task-store';

/** JSON Schema of a `TaskItem` as the task tools return it. */
export const TASK_ITEM_SCHEMA: Record<string, unknown> = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    sessionId: { type: 'integer' },
    title: { type: 'string' },
    description: { type: 'string' },
    status: { type: 'string', enum: [...TASK_STATUSES] },
    createdAt: { type: 'string', description: 'ISO 8601 timestamp.' },
    updatedAt: { type: 'string', description: 'ISO 8601 timestamp.' },
  },
  required: ['id', 'sessionId', 'title', 'description', 'status', 'createdAt', 'updatedAt'],
};

/**
 * Base of the task tools: they act on the calling session's todo list in a `TaskStore`, so they
 * need a session id (not a workspace). Arguments that are not a JSON object, a missing session
 * and a failing store all become error results.
 */
export abstract class SessionTaskTool extends BaseTool {
  constructor(protected readonly store: TaskStore) {
    super();
  }

  /** Does the work once the arguments are an object and the session is known. */
  protected abstract run(args: Record<string, unknown>, sessionId: number): ToolOutput;

  protected override executeWithSession(argumentsJson: string, sessionId: number | null, _workspace: string | null): ToolOutput {
    if (sessionId === null) return errorResult(`${this.getName()} needs a session to run`);
    const parsed = parseToolArguments(argumentsJson);
    if (!parsed.ok) return errorResult(parsed.error);
    try {
      return this.run(parsed.args, sessionId);
    } catch (error) {
      return errorResult(`${this.getName()} failed: ${errorMessage(error)}`);
    }
  }

  protected override executeImpl(_argumentsJson: string): ToolOutput {
    return errorResult(`${this.getName()} needs a session to run`);
  }
}

/** An optional `status` field, which must be one of `TASK_STATUSES`. */
export function optionalTaskStatus(args: Record<string, unknown>): ArgumentResult<TaskStatus | undefined> {
  const status = optionalString(args, 'status');
  if (!status.ok) return status;
  if (status.value === undefined) return { ok: true, value: undefined };
  if (!(TASK_STATUSES as readonly string[]).includes(status.value)) {
    return { ok: false, error: `invalid status '${status.value}'; expected one of ${TASK_STATUSES.join(', ')}` };
  }
  return { ok: true, value: status.value as TaskStatus };
}

/** Schema fragment of the `status` argument. */
export const TASK_STATUS_PROPERTY: Record<string, unknown> = {
  type: 'string',
  enum: [...TASK_STATUSES],
  description: `Task status: one of ${TASK_STATUSES.join(', ')}.`,
};
