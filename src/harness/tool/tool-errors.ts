/** Thrown by the legacy dispatch path when no tool has the requested name. */
export class UnknownToolError extends Error {
  override readonly name = 'UnknownToolError';
  constructor(readonly toolName: string) {
    super(`Unknown tool: ${toolName}`);
  }
}
