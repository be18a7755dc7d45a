import type { ToolCapabilities } from '../tool';

import { optionalInteger, requireString } from '../tool-arguments';
import type { ToolOutput } from '../tool-output';
import type { Descriptor } from '../workspace-open';
import { looksBinary } from './binary-content';
import { errorResult, textResult } from './json-result';
import { openWorkspaceFile, readReachedEnd } from './regular-file';
import { WorkspaceTool } from './workspace-tool';

/** Default cap on the bytes `read_file` returns in one call: 1 MiB. */
export const DEFAULT_READ_FILE_MAX_BYTES = 1024 * 1024;

const CHUNK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

/** Options of `ReadFileTool`. */
export interface ReadFileToolOptions {
  /** Most bytes of file content returned by one call (default 1 MiB); more is cut with a note. */
  maxBytes?: number;
}

/**
 * `read_file {path, offset?, limit?}`: returns the raw text of a workspace file, or of the line
 * range `offset` (1-based) .. `offset + limit - 1`. The file is read in chunks and reading stops
 * once the range or the byte cap is reached, so a range of a huge file is cheap. The result is
 * the text itself (not JSON); a cut is announced by a trailing `[read_file: ...]` line. The text
 * is a success whatever it holds: a file whose content is `{"error":"x"}` was read.
 */
export class ReadFileTool extends WorkspaceTool {
  private readonly maxBytes: number;

  constructor(options: ReadFileToolOptions = {}) {
    super();
    const maxBytes = options.maxBytes ?? DEFAULT_READ_FILE_MAX_BYTES;
    if (!Number.isInteger(maxBytes) || maxBytes < 1) {
      throw new RangeError(`ReadFileTool maxBytes must be a positive integer, got ${maxBytes}`);
    }
    this.maxBytes = maxBytes;
  }

  getName(): string {
    return 'read_file';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'Read file', annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false } };
  }

  getDescription(): string {
    return (
      'Read a text file of the workspace. Returns the file content as plain text. For large files give ' +
      '`offset` (first line, 1-based) and `limit` (number of lines) to read a part; output beyond ' +
      `${this.maxBytes} bytes is cut and the cut is marked at the end.`
    );
  }

  getInputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'File path relative to the workspace root.' },
        offset: { type: 'integer', minimum: 1, description: 'First line to return, 1-based. Default 1.' },
        limit: { type: 'integer', minimum: 1, description: 'Number of lines to return. Default: to the end of the file.' },
      },
      required: ['path'],
      additionalProperties: false,
    };
  }

  protected async run(args: Record<string, unknown>, workspace: string): Promise<ToolOutput> {
    const pathArg = requireString(args, 'path');
    if (!pathArg.ok) return errorResult(pathArg.error);
    const offset = optionalInteger(args, 'offset', { min: 1 });
    if (!offset.ok) return errorResult(offset.error);
    const limit = optionalInteger(args, 'limit', { min: 1 });
    if (!limit.ok) return errorResult(limit.error);

    const opened = await openWorkspaceFile(workspace, pathArg.value, 'read', {
      directoryError: (shown) => `'${shown}' is a directory; use glob to list its files`,
    });
    if (!opened.ok) return errorResult(opened.error);
    const { handle, shown } = opened;
    try {
      return this.readRange(handle, shown, offset.value ?? 1, limit.value, opened.size);
    } finally {
      handle.close();
    }
  }

  private readRange(handle: Descriptor, shown: string, first: number, limit: number | undefined, sizeAtOpen: number): ToolOutput {
    const last = limit === undefined ? Infinity : first + limit - 1;
    // Every byte used is one a read filled: no need to zero it first.
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    const pieces: Buffer[] = [];
    let collected = 0;
    let line = 1;
    let position = 0;
    let lastByte = -1;
    let truncatedAtLine: number | null = null;

    reading: for (;;) {
      const bytesRead = handle.read(chunk, 0, CHUNK_BYTES, position);
      if (bytesRead === 0) break;
      const data = chunk.subarray(0, bytesRead);
      if (position === 0 && looksBinary(data)) {
        return errorResult(`'${shown}' looks like a binary file; read_file only returns text`);
      }
      position += bytesRead;
      lastByte = data[bytesRead - 1];
      let start = 0;
      while (start < data.length) {
        const newline = data.indexOf(NEWLINE, start);
        const end = newline === -1 ? data.length : newline + 1;
        if (line >= first) {
          const piece = data.subarray(start, end);
          if (collected + piece.length > this.maxBytes) {
            pieces.push(Buffer.from(piece.subarray(0, this.maxBytes - collected)));
            truncatedAtLine = line;
            break reading;
          }
          pieces.push(Buffer.from(piece));
          collected += piece.length;
        }
        if (newline === -1) break; // the line goes on in the next chunk
        line++;
        if (line > last) break reading;
        start = end;
      }
      if (readReachedEnd(bytesRead, CHUNK_BYTES, position, sizeAtOpen)) break;
    }

    if (truncatedAtLine !== null) {
      const text = trimPartialCharacter(Buffer.concat(pieces)).toString('utf8');
      return textResult(
        `${text}\n\n[read_file: output cut at ${this.maxBytes} bytes, inside line ${truncatedAtLine}; ` +
          `call read_file with offset=${truncatedAtLine} and a limit to read on]`,
      );
    }
    if (first > 1 && line <= last) {
      // Reading reached the end of the file: `line` is one past the last line, or on the last
      // line when the file does not end with a newline.
      const lineCount = position === 0 ? 0 : lastByte === NEWLINE ? line - 1 : line;
      if (first > lineCount) {
        return errorResult(`offset ${first} is past the end of '${shown}', which has ${lineCount} lines`);
      }
    }
    return textResult(Buffer.concat(pieces).toString('utf8'));
  }
}

/** Drops an incomplete UTF-8 sequence at the end of a cut, so no replacement character appears. */
function trimPartialCharacter(bytes: Buffer): Buffer {
  let lead = bytes.length - 1;
  while (lead >= 0 && (bytes[lead] & 0xc0) === 0x80) lead--;
  if (lead < 0) return bytes;
  const byte = bytes[lead];
  const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
  return bytes.length - lead < length ? bytes.subarray(0, lead) : bytes;
}
