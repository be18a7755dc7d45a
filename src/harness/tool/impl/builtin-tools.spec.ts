import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { BackgroundTaskManager } from '../../runtime/background-task-manager';
import type { Tool } from '../tool';
import { createBuiltinTools } from './builtin-tools';
import { InMemoryTaskStore } from './in-memory-task-store';
import { failureMessage, successText } from './testing/tool-return';

const SESSION = 11;
const USER = 22;

/** For each tool: arguments that satisfy it and the fields it must insist on. */
const REQUIRED_FIELDS: Record<string, { valid: Record<string, unknown>; required: string[] }> = {
  read_file: { valid: { path: 'a.txt' }, required: ['path'] },
  write_file: { valid: { path: 'b.txt', content: 'x' }, required: ['path', 'content'] },
  edit_file: { valid: { path: 'a.txt', old_string: 'hello', new_string: 'bye' }, required: ['path', 'old_string', 'new_string'] },
  glob: { valid: { pattern: '*.txt' }, required: ['pattern'] },
  grep: { valid: { pattern: 'hello' }, required: ['pattern'] },
  shell: { valid: { command: 'true' }, required: ['command'] },
  task_create: { valid: { title: 't' }, required: ['title'] },
  task_update: { valid: { task_id: 1, status: 'completed' }, required: ['task_id'] },
  task_list: { valid: {}, required: [] },
  task_delete: { valid: { task_id: 1 }, required: ['task_id'] },
  ask_user_questions: { valid: { questions: [{ question: 'Which?' }] }, required: ['questions'] },
};

describe('createBuiltinTools', () => {
  let workspace: string;
  let tools: Tool[];

  beforeEach(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-builtin-'));
    await fs.writeFile(path.join(workspace, 'a.txt'), 'hello\n');
    tools = createBuiltinTools({
      taskStore: new InMemoryTaskStore(),
      shell: { enabled: true, background: new BackgroundTaskManager() },
    });
  });

  afterEach(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  const byName = (name: string): Tool => {
    const tool = tools.find((candidate) => candidate.getName() === name);
    if (!tool) throw new Error(`no tool ${name}`);
    return tool;
  };

  it('returns the eleven built-in tools with distinct names', () => {
    expect(tools.map((tool) => tool.getName()).sort()).toEqual(Object.keys(REQUIRED_FIELDS).sort());
  });

  it('passes readFileMaxBytes to read_file', async () => {
    const small = createBuiltinTools({ taskStore: new InMemoryTaskStore(), shell: { enabled: false }, readFileMaxBytes: 3 });
    const readFile = small.find((tool) => tool.getName() === 'read_file') as Tool;
    expect(successText(await readFile.execute('{"path":"a.txt"}', workspace))).toMatch(/^hel\n\n\[read_file: output cut at 3 bytes/);
  });

  describe.each(Object.keys(REQUIRED_FIELDS))('%s', (name) => {
    const { valid, required } = REQUIRED_FIELDS[name];
    const call = (argumentsJson: string) => byName(name).execute(argumentsJson, SESSION, USER, workspace);

    it('has a description and an object input schema listing required fields, each property described', () => {
      const tool = byName(name);
      expect(tool.getDescription().length).toBeGreaterThan(20);
      const schema = tool.getInputSchema() as { type: string; properties: Record<string, { description?: string }>; required: string[] };
      expect(schema.type).toBe('object');
      expect(schema.required).toEqual(required);
      for (const field of required) expect(schema.properties).toHaveProperty(field);
      for (const [field, property] of Object.entries(schema.properties)) {
        expect({ field, description: typeof property.description }).toEqual({ field, description: 'string' });
      }
    });

    it('accepts its valid arguments, stating a success', async () => {
      if (name === 'task_update' || name === 'task_delete') {
        await byName('task_create').execute('{"title":"first"}', SESSION, USER, workspace);
      }
      const result = await call(JSON.stringify(valid));
      if (name === 'ask_user_questions') {
        expect(failureMessage(result)).toBe('ask_user_questions must be dispatched through the tool dispatcher');
      } else {
        expect(successText(result)).not.toMatch(/^\{"error"/);
      }
    });

    it('reports malformed JSON arguments', async () => {
      expect(failureMessage(await call('{"oops'))).toMatch(/^arguments are not valid JSON/);
    });

    it.each([
      ['[]', 'array'],
      ['null', 'null'],
      ['7', 'number'],
      ['"x"', 'string'],
    ])('reports non-object arguments %s', async (json, type) => {
      expect(failureMessage(await call(json))).toBe(`arguments must be a JSON object, got ${type}`);
    });

    if (required.length > 0) {
      it.each(required)('reports the missing required field %s by name', async (field) => {
        const args = { ...valid };
        delete args[field];
        expect(failureMessage(await call(JSON.stringify(args)))).toContain(`'${field}'`);
      });

      it.each(required)('reports a wrongly typed %s by name', async (field) => {
        const args = { ...valid, [field]: { nested: true } };
        expect(failureMessage(await call(JSON.stringify(args)))).toMatch(new RegExp(`'?${field.replace(/[[\]]/g, '\\$&')}'? must`));
      });
    }

    it('called with only the arguments (no workspace, no session), answers a clear error', async () => {
      const message = failureMessage(await byName(name).execute(JSON.stringify(valid)));
      if (name === 'ask_user_questions') {
        expect(message).toMatch(/dispatched through the tool dispatcher/);
      } else if (name.startsWith('task_')) {
        expect(message).toBe(`${name} needs a session to run`);
      } else {
        expect(message).toBe(`${name} needs a workspace to run`);
      }
    });
  });
});
