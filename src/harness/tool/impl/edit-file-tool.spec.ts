import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { countLineChanges, countOccurrences, EditFileTool } from './edit-file-tool';
import { failureMessage, successJson } from './testing/tool-return';

describe('EditFileTool', () => {
  let workspace: string;

  beforeEach(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-edit-'));
    await fs.writeFile(path.join(workspace, 'code.ts'), 'const a = 1;\nconst b = 2;\nconst c = 3;\n');
  });

  afterEach(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  const edit = (args: Record<string, unknown>) => new EditFileTool().execute(JSON.stringify({ path: 'code.ts', ...args }), workspace);
  const content = () => fs.readFile(path.join(workspace, 'code.ts'), 'utf8');

  it('replaces the unique match and reports the file change', async () => {
    expect(successJson(await edit({ old_string: 'b = 2', new_string: 'b = 20' }))).toEqual({
      path: 'code.ts',
      file_change: { path: 'code.ts', linesAdded: 1, linesDeleted: 1 },
    });
    expect(await content()).toBe('const a = 1;\nconst b = 20;\nconst c = 3;\n');
  });

  it('counts inserted and removed lines', async () => {
    expect(successJson(await edit({ old_string: 'const b = 2;\n', new_string: 'const b = 2;\nconst b2 = 4;\nconst b3 = 5;\n' }))).toEqual(
      expect.objectContaining({ file_change: { path: 'code.ts', linesAdded: 2, linesDeleted: 0 } }),
    );
    expect(successJson(await edit({ old_string: 'const a = 1;\nconst b = 2;\n', new_string: '' }))).toEqual(
      expect.objectContaining({ file_change: { path: 'code.ts', linesAdded: 0, linesDeleted: 2 } }),
    );
    expect(await content()).toBe('const b2 = 4;\nconst b3 = 5;\nconst c = 3;\n');
  });

  describe('when the match is not unique', () => {
    it('refuses no match and leaves the file alone', async () => {
      expect(failureMessage(await edit({ old_string: 'const d', new_string: 'x' }))).toBe("old_string was not found in 'code.ts'");
      expect(await content()).toBe('const a = 1;\nconst b = 2;\nconst c = 3;\n');
    });

    it('refuses several matches, saying how many', async () => {
      expect(failureMessage(await edit({ old_string: 'const', new_string: 'let' }))).toBe(
        "old_string occurs 3 times in 'code.ts'; include more surrounding text so it matches exactly once",
      );
      expect(await content()).toBe('const a = 1;\nconst b = 2;\nconst c = 3;\n');
    });
  });

  it.each([
    [{ old_string: '', new_string: 'x' }, "'old_string' must not be empty"],
    [{ old_string: 'a', new_string: 'a' }, 'old_string and new_string are identical; nothing to change'],
    [{ path: 'missing.ts', old_string: 'a', new_string: 'b' }, "no such file or directory: 'missing.ts'"],
  ])('%j → error', async (args, error) => {
    expect(failureMessage(await edit(args))).toBe(error);
  });
});

describe('countLineChanges', () => {
  const count = (content: string, oldString: string, newString: string) =>
    countLineChanges(content, content.indexOf(oldString), oldString, newString);

  it.each([
    ['a word inside a line', 'x foo y\n', 'foo', 'bar', 1, 1],
    ['a new line after a line', 'a\nc\n', 'a\n', 'a\nb\n', 1, 0],
    ['a line split in two', 'a\nbX\n', 'a\nb', 'a\nb\n', 2, 1],
    ['the last line deleted', 'a\nb\n', 'b\n', '', 0, 1],
    ['a match at offset 0 after a leading newline', '\nfoo\n', '\nfoo', '\nbar', 1, 1],
    ['three lines replaced by one', 'k\n1\n2\n3\nk\n', '1\n2\n3', 'one', 1, 3],
  ])('%s', (_label, content, oldString, newString, added, deleted) => {
    expect(count(content, oldString, newString)).toEqual({ linesAdded: added, linesDeleted: deleted });
  });
});

describe('countOccurrences', () => {
  it('counts overlapping occurrences, which make a match ambiguous', () => {
    expect(countOccurrences('aaa', 'aa')).toBe(2);
    expect(countOccurrences('abc', 'x')).toBe(0);
  });
});
