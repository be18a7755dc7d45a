import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ChatMessage } from '../../harness/llm/chat-request';
import { HarnessDatabase, SCHEMA_VERSION } from './harness-database';
import { MessageRepository } from './message-repository';
import { InvalidRecordError } from './persistence-errors';
import { RunRepository } from './run-repository';
import { SessionRepository } from './session-repository';
import { SqliteAttachmentStore } from './sqlite-attachment-store';

describe('MessageRepository', () => {
  let database: HarnessDatabase;
  let messages: MessageRepository;
  let sessionId: number;
  let tick: number;

  beforeEach(() => {
    tick = 0;
    database = new HarnessDatabase(':memory:', { now: () => new Date(Date.UTC(2024, 0, 1) + 1000 * tick++) });
    messages = new MessageRepository(database);
    sessionId = new SessionRepository(database).create({
      userId: 1,
      executionMode: 'CLOUD',
      permissionLevel: 'FULL',
      workspace: 'w',
    }).id;
  });

  afterEach(() => database.close());

  const assistantCall: ChatMessage = {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
      { id: 'call_2', type: 'function', function: { name: 'shell', arguments: '{"command": "ls",' } },
    ],
  };

  describe('append', () => {
    it('stores a message and answers the record', () => {
      const record = messages.append(sessionId, 'exec-1', { role: 'user', content: 'hello' });
      expect(record).toEqual({
        id: expect.any(Number),
        sessionId,
        executionId: 'exec-1',
        role: 'user',
        content: 'hello',
        createdAt: '2024-01-01T00:00:01.000Z',
      });
      expect(messages.listBySession(sessionId)).toEqual([record]);
    });

    it('round-trips tool calls, including malformed argument strings, exactly', () => {
      const record = messages.append(sessionId, 'exec-1', assistantCall);
      expect(record.content).toBeNull();
      expect(record.toolCalls).toEqual(assistantCall.tool_calls);
      expect(record).not.toHaveProperty('toolCallId');
      expect(messages.listBySession(sessionId)[0].toolCalls).toEqual(assistantCall.tool_calls);
    });

    it.each([
      ['unicode and newlines', '第一行\n😀 émoji\r\n\ttab  \u00a0 trailing spaces   \n\n'],
      ['JSON that must not be re-serialised', '{ "b":1,   "a" : [1.50, 2e3] }'],
      ['a NUL character', 'before\u0000after'],
      ['an empty string', ''],
      ['leading and trailing whitespace', '   padded   '],
    ])('keeps tool content with %s byte for byte', (_label, content) => {
      messages.append(sessionId, 'exec-1', { role: 'tool', content, tool_call_id: 'call_1' });
      const [stored] = messages.listBySession(sessionId);
      expect(stored.content).toBe(content);
      expect(Buffer.from(stored.content as string, 'utf8').equals(Buffer.from(content, 'utf8'))).toBe(true);
      expect(stored.toolCallId).toBe('call_1');
    });

    it('keeps a 1 MB tool result intact in a file, across a reopen', () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-messages-'));
      const file = path.join(dir, 'h.db');
      try {
        const line = 'line ✓ with unicode — 0123456789 😀\r\n';
        const content = line.repeat(Math.ceil((1024 * 1024) / line.length));
        const writer = new HarnessDatabase(file);
        const id = new SessionRepository(writer).create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'w' }).id;
        new MessageRepository(writer).append(id, 'exec-1', { role: 'tool', content, tool_call_id: 'big' });
        writer.close();

        const reader = new HarnessDatabase(file);
        const [stored] = new MessageRepository(reader).listBySession(id);
        reader.close();
        expect(stored.content?.length).toBe(content.length);
        expect(stored.content === content).toBe(true);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('turns a lone surrogate, which UTF-8 cannot hold, into one U+FFFD and keeps pairs', () => {
      messages.append(sessionId, null, { role: 'tool', content: 'a\ud800b\udc00c😀', tool_call_id: 'c' });
      expect(messages.listBySession(sessionId)[0].content).toBe('a\ufffdb\ufffdc😀');
    });

    it('keeps a lone surrogate inside tool call arguments (JSON escapes it)', () => {
      const message: ChatMessage = {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'x', arguments: '"\ud800"' } }],
      };
      expect(messages.append(sessionId, null, message).toolCalls).toEqual(message.tool_calls);
    });

    it('refuses an unknown role', () => {
      expect(() => messages.append(sessionId, null, { role: 'developer' as never, content: 'x' })).toThrow(InvalidRecordError);
    });

    it('refuses a message of a session that does not exist', () => {
      expect(() => messages.append(9999, null, { role: 'user', content: 'x' })).toThrow(/FOREIGN KEY/);
    });
  });

  describe('appendMany', () => {
    it('appends a batch in order', () => {
      const records = messages.appendMany(sessionId, 'exec-2', [
        { role: 'user', content: 'read a.txt' },
        assistantCall,
        { role: 'tool', content: 'A', tool_call_id: 'call_1' },
      ]);
      expect(records.map((record) => record.role)).toEqual(['user', 'assistant', 'tool']);
      expect(messages.listBySession(sessionId)).toEqual(records);
    });

    describe('when one message of the batch cannot be written', () => {
      beforeEach(() => {
        messages.append(sessionId, 'exec-1', { role: 'user', content: 'before' });
      });

      const contents = () => messages.listBySession(sessionId).map((record) => record.content);

      it('writes none of it when the repository refuses a message', () => {
        const batch: ChatMessage[] = [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'two' },
          { role: undefined as never, content: 'three' },
        ];
        expect(() => messages.appendMany(sessionId, 'exec-2', batch)).toThrow(InvalidRecordError);
        expect(contents()).toEqual(['before']);
      });

      it('writes none of it when tool calls cannot be serialised', () => {
        const circular: unknown[] = [];
        circular.push(circular);
        const batch: ChatMessage[] = [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: null, tool_calls: circular as never },
        ];
        expect(() => messages.appendMany(sessionId, 'exec-2', batch)).toThrow(TypeError);
        expect(contents()).toEqual(['before']);
      });

      it('writes none of it when the database aborts a later insert', () => {
        database.connection.exec(
          `CREATE TRIGGER poison BEFORE INSERT ON messages WHEN NEW.content = 'poison'
           BEGIN SELECT RAISE(ABORT, 'poisoned row'); END`,
        );
        const batch: ChatMessage[] = [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'two' },
          { role: 'user', content: 'poison' },
          { role: 'assistant', content: 'four' },
        ];
        expect(() => messages.appendMany(sessionId, 'exec-2', batch)).toThrow('poisoned row');
        expect(contents()).toEqual(['before']);
      });
    });
  });

  describe('stageToolResult', () => {
    const stagedRows = () => database.connection.prepare('SELECT tool_call_id FROM staged_tool_results ORDER BY tool_call_id').pluck().all();

    beforeEach(() => new RunRepository(database).start('e1', sessionId));

    it('writes the results with the next group commit', () => {
      messages.stageToolResult('e1', { role: 'tool', tool_call_id: 'call_2', content: 'two' });
      messages.stageToolResult('e1', { role: 'tool', tool_call_id: 'call_1', content: 'one' });
      expect(stagedRows()).toEqual([]);
      database.commit();
      expect(stagedRows()).toEqual(['call_1', 'call_2']);
      expect(database.connection.inTransaction).toBe(false);
    });

    it('writes none of a round appended before the commit, and drops those written before', () => {
      messages.stageToolResult('e1', { role: 'tool', tool_call_id: 'call_1', content: 'one' });
      database.commit();
      messages.stageToolResult('e1', { role: 'tool', tool_call_id: 'call_2', content: 'two' });
      messages.appendRound(sessionId, 'e1', [
        { role: 'tool', tool_call_id: 'call_1', content: 'one' },
        { role: 'tool', tool_call_id: 'call_2', content: 'two' },
      ]);
      database.commit();
      expect(stagedRows()).toEqual([]);
      expect(messages.listBySession(sessionId).map((record) => record.toolCallId)).toEqual(['call_1', 'call_2']);
    });

    it('answers results not written yet when asked for the staged ones', () => {
      messages.stageToolResult('e1', { role: 'tool', tool_call_id: 'call_1', content: 'one', is_error: true });
      expect(messages.stagedToolResults('e1')).toEqual(new Map([['call_1', { content: 'one', isError: true }]]));
    });
  });

  describe('listBySession', () => {
    it('lists only the session’s messages, in insertion order', () => {
      const sessions = new SessionRepository(database);
      const otherId = sessions.create({ userId: 2, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'o' }).id;
      messages.append(sessionId, null, { role: 'user', content: '1' });
      messages.append(otherId, null, { role: 'user', content: 'other' });
      messages.append(sessionId, null, { role: 'assistant', content: '2' });
      messages.append(sessionId, null, { role: 'user', content: '3' });
      expect(messages.listBySession(sessionId).map((record) => record.content)).toEqual(['1', '2', '3']);
      expect(messages.listBySession(otherId).map((record) => record.content)).toEqual(['other']);
      expect(messages.listBySession(12345)).toEqual([]);
    });
  });

  describe('toChatMessages', () => {
    it('rebuilds the conversation the model saw, naming each tool message after its call', () => {
      const conversation: ChatMessage[] = [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'read a.txt' },
        assistantCall,
        { role: 'tool', content: 'A\n', tool_call_id: 'call_1' },
        { role: 'tool', content: '{"error":"Invalid JSON arguments"}', tool_call_id: 'call_2' },
        { role: 'assistant', content: 'done' },
      ];
      messages.appendMany(sessionId, 'exec-1', conversation);
      expect(messages.toChatMessages(sessionId)).toEqual([
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'read a.txt' },
        assistantCall,
        { role: 'tool', content: 'A\n', tool_call_id: 'call_1', name: 'read_file' },
        { role: 'tool', content: '{"error":"Invalid JSON arguments"}', tool_call_id: 'call_2', name: 'shell' },
        { role: 'assistant', content: 'done' },
      ]);
    });

    it('reads damaged tool calls as none instead of failing the conversation', () => {
      const record = messages.append(sessionId, null, assistantCall);
      database.connection.prepare("UPDATE messages SET tool_calls = '[oops' WHERE id = ?").run(record.id);
      expect(messages.toChatMessages(sessionId)).toEqual([{ role: 'assistant', content: null, tool_calls: [] }]);
    });
  });
});

describe('MessageRepository and failed tool calls', () => {
  let dir: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-is-error-'));
  });

  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps is_error of a tool message for the next run, and only where it was set', () => {
    const database = new HarnessDatabase(':memory:');
    const sessions = new SessionRepository(database);
    const messages = new MessageRepository(database);
    const session = sessions.create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'w' });
    messages.appendMany(session.id, 'e1', [
      { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'read_file', arguments: '{}' } }, { id: 'b', type: 'function', function: { name: 'glob', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'a', content: '{"error":"missing"}', is_error: true },
      { role: 'tool', tool_call_id: 'b', content: '{"files":[]}' },
    ]);
    const history = messages.toChatMessages(session.id);
    expect(history[1]).toEqual({ role: 'tool', tool_call_id: 'a', name: 'read_file', content: '{"error":"missing"}', is_error: true });
    expect(history[2]).not.toHaveProperty('is_error');
    expect(messages.listBySession(session.id).map((record) => record.isError)).toEqual([undefined, true, undefined]);
    database.close();
  });

  it('upgrades a database written before the column existed, keeping its messages', () => {
    const file = path.join(dir, 'v1.db');
    const v1 = new HarnessDatabase(file);
    const session = new SessionRepository(v1).create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'w' });
    new MessageRepository(v1).append(session.id, 'e1', { role: 'user', content: 'before the upgrade' });
    // Turn the file back into what schema version 1 wrote.
    v1.connection.exec('ALTER TABLE messages DROP COLUMN is_error; ALTER TABLE messages DROP COLUMN attachments');
    v1.connection.exec('DROP TABLE staged_tool_results; DROP TABLE runs; DROP TABLE attachments; DROP TABLE session_event_batches');
    v1.connection.pragma('user_version = 1');
    v1.close();

    const upgraded = new HarnessDatabase(file);
    expect(upgraded.schemaVersion).toBe(SCHEMA_VERSION);
    const repository = new MessageRepository(upgraded);
    repository.append(session.id, 'e2', { role: 'tool', tool_call_id: 'x', content: 'failed', is_error: true });
    expect(repository.listBySession(session.id).map((record) => [record.content, record.isError])).toEqual([
      ['before the upgrade', undefined],
      ['failed', true],
    ]);
    upgraded.close();
  });
});

describe('MessageRepository and attachments', () => {
  let database: HarnessDatabase;
  let store: SqliteAttachmentStore;
  let messages: MessageRepository;
  let sessionId: number;

  /** A PNG signature and bytes no text encoding keeps as they are. */
  const pngBytes = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe, 0x80]);

  const screenshotCall: ChatMessage = {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_shot', type: 'function', function: { name: 'mcp__desk__screenshot', arguments: '{}' } }],
  };

  beforeEach(() => {
    database = new HarnessDatabase(':memory:');
    store = new SqliteAttachmentStore(database);
    messages = new MessageRepository(database, store);
    sessionId = new SessionRepository(database).create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'w' }).id;
    new RunRepository(database).start('e1', sessionId);
  });

  afterEach(() => database.close());

  const save = (mediaType: string, data: Uint8Array, name?: string) =>
    store.save({ sessionId, executionId: 'e1', toolCallId: 'call_shot', mediaType, data, ...(name === undefined ? {} : { name }) });

  it('keeps a tool message’s attachment references on its record, as references only', () => {
    const image = save('image/png', pngBytes, 'shot.png');
    const log = save('text/plain', new TextEncoder().encode('full output'));
    const record = messages.append(sessionId, 'e1', {
      role: 'tool',
      tool_call_id: 'call_shot',
      content: 'Took a screenshot',
      attachments: [image, log],
      images: [{ mediaType: 'image/png', data: Buffer.from(pngBytes).toString('base64') }],
    });
    expect(record.attachments).toEqual([image, log]);
    expect(messages.listBySession(sessionId)[0].attachments).toEqual([image, log]);
    const stored = database.connection.prepare('SELECT content, attachments FROM messages').get() as { content: string; attachments: string };
    expect(stored.content).toBe('Took a screenshot');
    expect(JSON.parse(stored.attachments)).toEqual([image, log]);
    // The image's bytes live in the attachments table only: no base64 in the message row.
    expect(JSON.stringify(stored)).not.toContain(Buffer.from(pngBytes).toString('base64'));
  });

  it('leaves attachments out of records of messages without any', () => {
    messages.appendMany(sessionId, 'e1', [
      { role: 'user', content: 'hi' },
      { role: 'tool', tool_call_id: 'c', content: 'x', attachments: [] },
    ]);
    expect(messages.listBySession(sessionId).map((record) => 'attachments' in record)).toEqual([false, false]);
  });

  it('stores references through appendRound and drops the staged ones', () => {
    const image = save('image/png', pngBytes);
    messages.append(sessionId, 'e1', screenshotCall);
    messages.stageToolResult('e1', { role: 'tool', tool_call_id: 'call_shot', content: 'shot', attachments: [image] });
    messages.appendRound(sessionId, 'e1', [{ role: 'tool', tool_call_id: 'call_shot', content: 'shot', attachments: [image] }]);
    expect(messages.listBySession(sessionId)[1]).toMatchObject({ role: 'tool', toolCallId: 'call_shot', attachments: [image] });
    expect(messages.stagedToolResults('e1').size).toBe(0);
  });

  it('keeps the references of a staged result until its round is appended', () => {
    const image = save('image/png', pngBytes, 'shot.png');
    messages.stageToolResult('e1', { role: 'tool', tool_call_id: 'call_shot', content: 'shot', attachments: [image] });
    messages.stageToolResult('e1', { role: 'tool', tool_call_id: 'call_text', content: 'text only', is_error: true });
    const staged = messages.stagedToolResults('e1');
    expect(staged.get('call_shot')).toEqual({ content: 'shot', isError: false, attachments: [image] });
    expect(staged.get('call_text')).toEqual({ content: 'text only', isError: true });
  });

  describe('toChatMessages', () => {
    it('restores the references, and the images from the store as base64, for the next run', () => {
      const image = save('image/png', pngBytes, 'shot.png');
      const log = save('text/plain', new TextEncoder().encode('full output'));
      messages.appendMany(sessionId, 'e1', [
        screenshotCall,
        { role: 'tool', tool_call_id: 'call_shot', content: 'Took a screenshot', attachments: [image, log] },
      ]);
      const [, tool] = messages.toChatMessages(sessionId);
      expect(tool).toEqual({
        role: 'tool',
        tool_call_id: 'call_shot',
        name: 'mcp__desk__screenshot',
        content: 'Took a screenshot',
        attachments: [image, log],
        images: [{ mediaType: 'image/png', data: Buffer.from(pngBytes).toString('base64') }],
      });
      expect(Buffer.from(tool.images![0].data, 'base64').equals(Buffer.from(pngBytes))).toBe(true);
    });

    it('gives providers the bare image type, without parameters', () => {
      const image = save('image/png; profile=srgb', pngBytes);
      messages.append(sessionId, 'e1', { role: 'tool', tool_call_id: 'c', content: 'x', attachments: [image] });
      expect(messages.toChatMessages(sessionId)[0].images).toEqual([{ mediaType: 'image/png', data: Buffer.from(pngBytes).toString('base64') }]);
    });

    it('shows no image for attachments that are not images', () => {
      const log = save('text/plain', new TextEncoder().encode('full output'));
      messages.append(sessionId, 'e1', { role: 'tool', tool_call_id: 'c', content: 'cut', attachments: [log] });
      const [tool] = messages.toChatMessages(sessionId);
      expect(tool.attachments).toEqual([log]);
      expect(tool).not.toHaveProperty('images');
    });

    it('shows no image the session does not own or the store no longer has, keeping the reference', () => {
      const otherSession = new SessionRepository(database).create({ userId: 2, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'o' }).id;
      const foreign = store.save({ sessionId: otherSession, executionId: null, toolCallId: 'x', mediaType: 'image/png', data: pngBytes });
      const missing = { id: 'att_missing', mediaType: 'image/png', bytes: 12 };
      messages.append(sessionId, 'e1', { role: 'tool', tool_call_id: 'c', content: 'x', attachments: [foreign, missing] });
      const [tool] = messages.toChatMessages(sessionId);
      expect(tool.attachments).toEqual([foreign, missing]);
      expect(tool).not.toHaveProperty('images');
    });

    it('reads a damaged attachments column as no attachments', () => {
      const record = messages.append(sessionId, 'e1', { role: 'tool', tool_call_id: 'c', content: 'x' });
      database.connection.prepare("UPDATE messages SET attachments = '[oops' WHERE id = ?").run(record.id);
      expect(messages.toChatMessages(sessionId)).toEqual([{ role: 'tool', tool_call_id: 'c', content: 'x' }]);
    });
  });
});
