import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { ReadFileTool } from './read-file-tool';
import { failureMessage, outcomeOf, successText } from './testing/tool-return';

describe('ReadFileTool', () => {
  let workspace: string;

  beforeEach(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-read-'));
    await fs.writeFile(path.join(workspace, 'lines.txt'), 'one\ntwo\nthree\nfour\n');
  });

  afterEach(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  const read = (args: Record<string, unknown>, tool = new ReadFileTool()) => tool.execute(JSON.stringify(args), workspace);
  /** The text of a read that succeeded. */
  const text = async (args: Record<string, unknown>, tool?: ReadFileTool) => successText(await read(args, tool));

  it('returns the whole file as raw text', async () => {
    expect(await text({ path: 'lines.txt' })).toBe('one\ntwo\nthree\nfour\n');
  });

  it('returns the line range from offset (1-based) for limit lines', async () => {
    expect(await text({ path: 'lines.txt', offset: 2, limit: 2 })).toBe('two\nthree\n');
    expect(await text({ path: 'lines.txt', offset: 3 })).toBe('three\nfour\n');
    expect(await text({ path: 'lines.txt', limit: 1 })).toBe('one\n');
  });

  it('keeps a last line without newline and CRLF endings as they are', async () => {
    await fs.writeFile(path.join(workspace, 'crlf.txt'), 'a\r\nb\r\nc');
    expect(await text({ path: 'crlf.txt', offset: 2 })).toBe('b\r\nc');
  });

  it('reads ranges across chunk boundaries of a large file', async () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i + 1}`);
    await fs.writeFile(path.join(workspace, 'big.txt'), `${lines.join('\n')}\n`);
    expect(await text({ path: 'big.txt', offset: 15_000, limit: 3 })).toBe('line 15000\nline 15001\nline 15002\n');
  });

  it('reports an offset past the end with the line count', async () => {
    expect(failureMessage(await read({ path: 'lines.txt', offset: 5 }))).toBe("offset 5 is past the end of 'lines.txt', which has 4 lines");
    expect(await text({ path: 'lines.txt', offset: 4 })).toBe('four\n');
  });

  it('reads a file whose text looks like a failure as a success, text unchanged', async () => {
    await fs.writeFile(path.join(workspace, 'failed.json'), '{"error":"x"}');
    expect(outcomeOf(await read({ path: 'failed.json' }))).toEqual({ text: '{"error":"x"}', isError: false });
    await fs.writeFile(path.join(workspace, 'exit.json'), '{"exit_code":2}');
    expect(outcomeOf(await read({ path: 'exit.json' }))).toEqual({ text: '{"exit_code":2}', isError: false });
  });

  it('states a failure with its reason beside the legacy text', async () => {
    const message = "no such file or directory: 'missing.txt'";
    expect(outcomeOf(await read({ path: 'missing.txt' }))).toEqual({ text: JSON.stringify({ error: message }), isError: true, errorMessage: message });
  });

  it('returns an empty file as an empty string', async () => {
    await fs.writeFile(path.join(workspace, 'empty.txt'), '');
    expect(await text({ path: 'empty.txt' })).toBe('');
  });

  describe('when the output exceeds maxBytes', () => {
    it('cuts at the cap and says where to continue', async () => {
      const result = await text({ path: 'lines.txt' }, new ReadFileTool({ maxBytes: 10 }));
      expect(result).toBe(
        'one\ntwo\nth\n\n[read_file: output cut at 10 bytes, inside line 3; call read_file with offset=3 and a limit to read on]',
      );
    });

    it('never splits a multi-byte character', async () => {
      await fs.writeFile(path.join(workspace, 'utf8.txt'), 'aé€');
      const result = await text({ path: 'utf8.txt' }, new ReadFileTool({ maxBytes: 4 }));
      expect(result.startsWith('aé\n\n[read_file: output cut at 4 bytes')).toBe(true);
      expect(result).not.toContain('\uFFFD');
    });

    it('counts the cap from the offset', async () => {
      expect(await text({ path: 'lines.txt', offset: 3 }, new ReadFileTool({ maxBytes: 11 }))).toBe('three\nfour\n');
    });
  });

  it('refuses a bad maxBytes configuration', () => {
    expect(() => new ReadFileTool({ maxBytes: 0 })).toThrow(RangeError);
  });

  describe('when the file cannot be read as text', () => {
    it.each([
      [{ path: 'missing.txt' }, "no such file or directory: 'missing.txt'"],
      [{ path: '.' }, "'.' is a directory; use glob to list its files"],
      [{ path: 'lines.txt', offset: 0 }, "'offset' must be at least 1, got 0"],
      [{ path: 'lines.txt', limit: 'all' }, "'limit' must be an integer, got string"],
    ])('%j → error', async (args, error) => {
      expect(failureMessage(await read(args))).toBe(error);
    });

    it('refuses a binary file', async () => {
      await fs.writeFile(path.join(workspace, 'blob.bin'), Buffer.from([0x89, 0x50, 0x00, 0x01]));
      expect(failureMessage(await read({ path: 'blob.bin' }))).toBe("'blob.bin' looks like a binary file; read_file only returns text");
    });
  });
});
