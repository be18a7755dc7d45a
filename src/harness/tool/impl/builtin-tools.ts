import type { Tool } from '../tool';
import { AskUserQuestionsTool } from './ask-user-questions-tool';
import { EditFileTool } from './edit-file-tool';
import { GlobTool } from './glob-tool';
import { GrepTool } from './grep-tool';
import { ReadFileTool } from './read-file-tool';
import { ShellTool, type ShellToolOptions } from './shell-tool';
import { TaskCreateTool } from './task-create-tool';
import { TaskDeleteTool } from './task-delete-tool';
import { TaskListTool } from './task-list-tool';
import type { TaskStore } from './task-store';
import { TaskUpdateTool } from './task-update-tool';
import { WriteFileTool } from './write-file-tool';

/** What `createBuiltinTools` needs. */
export interface BuiltinToolsOptions {
  /** Where the task tools keep the sessions' todo lists. */
  taskStore: TaskStore;
  /** Configuration of the `shell` tool (including whether it is enabled at all). */
  shell: ShellToolOptions;
  /** Cap on the bytes one `read_file` call returns (default 1 MiB). */
  readFileMaxBytes?: number;
}

/** The eleven built-in tools, ready to register. */
export function createBuiltinTools(options: BuiltinToolsOptions): Tool[] {
  return [
    new ReadFileTool({ maxBytes: options.readFileMaxBytes }),
    new WriteFileTool(),
    new EditFileTool(),
    new GlobTool(),
    new GrepTool(),
    new ShellTool(options.shell),
    new TaskCreateTool(options.taskStore),
    new TaskUpdateTool(options.taskStore),
    new TaskListTool(options.taskStore),
    new TaskDeleteTool(options.taskStore),
    new AskUserQuestionsTool(),
  ];
}
