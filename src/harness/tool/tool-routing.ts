import type { ToolDescriptor, ToolExecutor } from './tool-descriptor';
import { ASK_USER_QUESTIONS_TOOL, toolFacts } from './tool-capabilities';

/**
 * Where a call of the tool runs in a session of the given mode — the one routing rule, used by
 * the dispatcher and by the catalog that shows it. In LOCAL mode the desktop runs the built-in
 * tools, except those that always run on the server (the todo list) and `ask_user_questions`,
 * which the server asks of the user's clients.
 */
export function executorFor(descriptor: ToolDescriptor | undefined, toolName: string, executionMode: string | null): ToolExecutor {
  const executor = descriptor?.executor ?? 'server';
  if (executionMode !== 'LOCAL' || executor !== 'server') return executor;
  if (toolName === ASK_USER_QUESTIONS_TOOL || toolFacts(descriptor, toolName).serverOnly) return 'server';
  return 'desktop';
}
