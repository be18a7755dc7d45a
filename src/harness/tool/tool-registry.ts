import type { Tool } from './tool';

/** Tools by name. A `Map`, so names such as `constructor` or `__proto__` resolve to nothing. */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  constructor(tools: Iterable<Tool> = []) {
    for (const tool of tools) this.register(tool);
  }

  /** Adds a tool; a second tool with the same name is a configuration error. */
  register(tool: Tool): void {
    const name = tool.getName();
    if (this.tools.has(name)) {
      throw new Error(`A tool named '${name}' is already registered`);
    }
    this.tools.set(name, tool);
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  list(): Tool[] {
    return [...this.tools.values()];
  }

  names(): string[] {
    return [...this.tools.keys()];
  }
}
