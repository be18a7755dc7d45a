import fc from 'fast-check';
import { describeToolActivity, SUMMARY_MAX_LENGTH } from './activity-describer';

const TYPES = ['file_read', 'file_write', 'search', 'command', 'task', 'question', 'mcp', 'tool'];

describe('describeToolActivity', () => {
  describe('type', () => {
    it.each([
      ['read_file', 'file_read'],
      ['write_file', 'file_write'],
      ['edit_file', 'file_write'],
      ['glob', 'search'],
      ['grep', 'search'],
      ['shell', 'command'],
      ['task_create', 'task'],
      ['task_update', 'task'],
      ['task_list', 'task'],
      ['task_delete', 'task'],
      ['ask_user_questions', 'question'],
      ['mcp__demo__echo', 'mcp'],
      ['web_fetch', 'tool'],
      ['constructor', 'tool'],
    ])('maps %s to %s', (toolName, type) => {
      expect(describeToolActivity(toolName, '{}', '', false).type).toBe(type);
    });
  });

  describe('when the call succeeded', () => {
    it.each([
      ['read_file', '{"path":"src/a.txt"}', 'content', 'src/a.txt', 'Read src/a.txt'],
      ['write_file', '{"path":"b.txt","content":"x"}', 'ok', 'b.txt', 'Wrote b.txt'],
      ['edit_file', '{"path":"c.ts","old_string":"a","new_string":"b"}', 'ok', 'c.ts', 'Edited c.ts'],
      ['glob', '{"pattern":"**/*.ts"}', 'a.ts', '**/*.ts', 'Searched for **/*.ts'],
      ['grep', '{"pattern":"TODO","path":"src"}', 'a.ts:1', 'TODO', 'Searched for TODO in src'],
      ['shell', '{"command":"npm test"}', '{"exit_code":0,"stdout":"ok"}', 'npm test', 'Ran npm test (exit code 0)'],
      ['shell', '{"command":"sleep 5","async":true}', '{"task_id":"bg-1","message":"..."}', 'sleep 5', 'Started sleep 5 in the background'],
      ['shell', '{"command":"ls"}', 'plain output', 'ls', 'Ran ls'],
      ['task_create', '{"title":"Write docs"}', '{"id":1}', 'Write docs', 'Created task Write docs'],
      ['task_update', '{"task_id":3,"status":"completed"}', '{"id":3}', '#3', 'Updated task #3 → completed'],
      ['task_delete', '{"task_id":"4"}', '{"deleted":true}', '#4', 'Deleted task #4'],
      ['task_list', '{}', '[]', 'task_list', 'Listed tasks'],
      ['ask_user_questions', '{"questions":[{"question":"Which DB?"},{"question":"Why?"}]}', '{}', 'Which DB? (+1 more)', 'Asked 2 questions'],
      ['mcp__demo__echo', '{"text":"hi"}', 'hi', 'demo/echo', 'Called echo on demo'],
      ['web_fetch', '{"url":"https://example.com"}', '<html>', 'https://example.com', 'Ran web_fetch on https://example.com'],
    ])('describes %s %s', (toolName, args, result, target, summary) => {
      expect(describeToolActivity(toolName, args, result, false)).toEqual({
        type: expect.any(String),
        target,
        summary,
      });
    });
  });

  describe('when the call failed', () => {
    it('uses the message of an {"error":...} result', () => {
      expect(describeToolActivity('read_file', '{"path":"x"}', '{"error":"File not found: x"}', true)).toEqual({
        type: 'file_read',
        target: 'x',
        summary: 'read_file failed: File not found: x',
      });
    });

    it('shows a structured error as JSON and an empty one as a plain failure', () => {
      expect(describeToolActivity('grep', '{}', '{"error":{"code":404}}', true).summary).toBe('grep failed: {"code":404}');
      expect(describeToolActivity('grep', '{}', '{"error":null}', true).summary).toBe('grep failed');
    });

    it('gives the exit code and the first stderr line of a failed command', () => {
      const result = JSON.stringify({ exit_code: 2, stdout: '', stderr: '\nls: cannot access x\nmore' });
      expect(describeToolActivity('shell', '{"command":"ls x"}', result, true)).toEqual({
        type: 'command',
        target: 'ls x',
        summary: 'Command exited with code 2: ls: cannot access x',
      });
    });

    it('uses the first line of a plain-text failure', () => {
      expect(describeToolActivity('x', '{}', "Tool execution failed: tool 'x' is not in the allowed tool set\nstack", true).summary).toBe(
        "x failed: Tool execution failed: tool 'x' is not in the allowed tool set",
      );
    });
  });

  describe('when the input is malformed', () => {
    it.each([
      ['truncated JSON', '{"path": "a.t'],
      ['a JSON array', '["a.txt"]'],
      ['a JSON string', '"a.txt"'],
      ['JSON null', 'null'],
      ['an empty string', ''],
      ['a path of the wrong type', '{"path": 42}'],
      ['a blank path', '{"path": "   "}'],
    ])('falls back to the tool name for %s', (_label, args) => {
      expect(describeToolActivity('read_file', args, 'content', false)).toEqual({
        type: 'file_read',
        target: 'read_file',
        summary: 'Ran read_file',
      });
    });

    it('survives values of the wrong type', () => {
      const weird = describeToolActivity(undefined as never, null as never, { error: 1 } as never, 'yes' as never);
      expect(weird).toEqual({ type: 'tool', target: 'unknown', summary: 'Ran unknown' });
    });

    it('keeps a malformed MCP name as the target', () => {
      expect(describeToolActivity('mcp__only', '{}', '', false)).toEqual({ type: 'mcp', target: 'mcp__only', summary: 'Ran mcp__only' });
    });
  });

  describe('length', () => {
    it('cuts a long summary to one line of at most 200 characters without splitting a surrogate pair', () => {
      const message = `${'😀'.repeat(150)}\n${'x'.repeat(1_000_000)}`;
      const { summary } = describeToolActivity('read_file', '{"path":"a"}', JSON.stringify({ error: message }), true);
      expect(summary.length).toBeLessThanOrEqual(SUMMARY_MAX_LENGTH);
      expect(summary.endsWith('…')).toBe(true);
      expect(summary).not.toMatch(/\n/);
      expect(Buffer.from(summary, 'utf8').toString('utf8')).toBe(summary);
    });

    it('puts a multi-line command on one line', () => {
      const { target, summary } = describeToolActivity('shell', '{"command":"cd src &&\\n  npm test"}', '{"exit_code":0}', false);
      expect(target).toBe('cd src &&   npm test');
      expect(summary).toBe('Ran cd src && npm test (exit code 0)');
    });
  });

  it('never throws and keeps its promises for any input', () => {
    const toolNames = fc.oneof(
      fc.constantFrom('read_file', 'write_file', 'edit_file', 'glob', 'grep', 'shell', 'task_create', 'task_update', 'task_list', 'task_delete', 'ask_user_questions', 'mcp__s__t', 'mcp__', 'other'),
      fc.string(),
    );
    const jsonText = fc.oneof(fc.string(), fc.json(), fc.jsonValue().map((value) => JSON.stringify({ path: value, command: value, pattern: value, title: value, questions: value, error: value, exit_code: value })));
    fc.assert(
      fc.property(toolNames, jsonText, jsonText, fc.boolean(), (toolName, args, result, isError) => {
        const description = describeToolActivity(toolName, args, result, isError);
        expect(TYPES).toContain(description.type);
        expect(typeof description.target).toBe('string');
        expect(description.target.length).toBeGreaterThan(0);
        expect(description.summary.length).toBeGreaterThan(0);
        expect(description.summary.length).toBeLessThanOrEqual(SUMMARY_MAX_LENGTH);
      }),
      { numRuns: 500 },
    );
  });
});
