import type { NewAttachment } from '../../harness/tool/attachment-store';
import { toAttachmentRefs } from './attachment-refs';
import { HarnessDatabase } from './harness-database';
import { SessionRepository } from './session-repository';
import { normalizeMediaType, SqliteAttachmentStore } from './sqlite-attachment-store';

describe('SqliteAttachmentStore', () => {
  let database: HarnessDatabase;
  let store: SqliteAttachmentStore;
  let sessionId: number;
  let otherSessionId: number;

  beforeEach(() => {
    database = new HarnessDatabase(':memory:', { now: () => new Date(Date.UTC(2024, 0, 1)) });
    store = new SqliteAttachmentStore(database);
    const sessions = new SessionRepository(database);
    sessionId = sessions.create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'w' }).id;
    otherSessionId = sessions.create({ userId: 2, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'o' }).id;
  });

  afterEach(() => database.close());

  /** Every byte value, so a round trip that decodes or re-encodes anything fails. */
  const allBytes = () => Uint8Array.from({ length: 256 }, (_, index) => index);

  const newAttachment = (overrides: Partial<NewAttachment> = {}): NewAttachment => ({
    sessionId,
    executionId: 'exec-1',
    toolCallId: 'call_1',
    mediaType: 'image/png',
    data: allBytes(),
    ...overrides,
  });

  const rows = () => database.connection.prepare('SELECT * FROM attachments').all() as Array<Record<string, unknown>>;

  describe('save', () => {
    it('stores the bytes once, as a BLOB, and answers the reference', () => {
      const saved = store.save(newAttachment({ name: 'chart.png' }));
      expect(saved).toEqual({ id: expect.stringMatching(/^att_[A-Za-z0-9_-]{22}$/), mediaType: 'image/png', bytes: 256, name: 'chart.png' });
      expect(rows()).toEqual([
        {
          id: saved.id,
          session_id: sessionId,
          execution_id: 'exec-1',
          tool_call_id: 'call_1',
          media_type: 'image/png',
          name: 'chart.png',
          bytes: 256,
          data: Buffer.from(allBytes()),
          created_at: '2024-01-01T00:00:00.000Z',
        },
      ]);
    });

    it('leaves out the name when there is none', () => {
      const saved = store.save(newAttachment());
      expect(saved).not.toHaveProperty('name');
      expect(rows()[0].name).toBeNull();
    });

    it('stores only the viewed bytes of a Uint8Array that is a window on a larger buffer', () => {
      const backing = Uint8Array.from([9, 9, 1, 2, 3, 9]);
      const saved = store.save(newAttachment({ data: backing.subarray(2, 5) }));
      expect(saved.bytes).toBe(3);
      expect(Array.from(store.read(sessionId, saved.id)!.data)).toEqual([1, 2, 3]);
    });

    it('keeps an empty attachment', () => {
      const saved = store.save(newAttachment({ data: new Uint8Array(0), mediaType: 'text/plain' }));
      expect(saved.bytes).toBe(0);
      expect(store.read(sessionId, saved.id)!.data.byteLength).toBe(0);
    });

    it('gives every attachment its own random id', () => {
      const ids = new Set(Array.from({ length: 50 }, () => store.save(newAttachment()).id));
      expect(ids.size).toBe(50);
    });

    it('stores a media type a content-type header could not carry as application/octet-stream', () => {
      expect(store.save(newAttachment({ mediaType: 'text/html\r\nset-cookie: a=b' })).mediaType).toBe('application/octet-stream');
      expect(store.save(newAttachment({ mediaType: 'IMAGE/PNG' })).mediaType).toBe('image/png');
    });

    it('turns a lone surrogate of the name into U+FFFD', () => {
      const saved = store.save(newAttachment({ name: 'a\ud800.png' }));
      expect(saved.name).toBe('a\ufffd.png');
      expect(store.read(sessionId, saved.id)!.name).toBe('a\ufffd.png');
    });

    it('refuses an attachment of a session that does not exist', () => {
      expect(() => store.save(newAttachment({ sessionId: 9999 }))).toThrow(/FOREIGN KEY/);
    });
  });

  describe('read', () => {
    it('answers the bytes, media type and name exactly as saved', () => {
      const data = allBytes();
      const saved = store.save(newAttachment({ data, mediaType: 'application/pdf', name: 'report.pdf' }));
      const read = store.read(sessionId, saved.id);
      expect(read).toEqual({ mediaType: 'application/pdf', data: expect.any(Uint8Array), name: 'report.pdf' });
      expect(Buffer.from(read!.data).equals(Buffer.from(data))).toBe(true);
    });

    it('answers null for another session’s attachment', () => {
      const saved = store.save(newAttachment());
      expect(store.read(otherSessionId, saved.id)).toBeNull();
    });

    it('answers null for an unknown id', () => {
      store.save(newAttachment());
      expect(store.read(sessionId, 'att_unknown')).toBeNull();
      expect(store.read(sessionId, '')).toBeNull();
    });
  });
});

describe('normalizeMediaType', () => {
  it.each([
    ['image/png', 'image/png'],
    [' Image/PNG ', 'image/png'],
    ['text/plain; charset=utf-8', 'text/plain; charset=utf-8'],
    ['text/plain;charset="utf-8"', 'text/plain;charset="utf-8"'],
    ['application/vnd.api+json', 'application/vnd.api+json'],
  ])('keeps %j as %j', (value, expected) => {
    expect(normalizeMediaType(value)).toBe(expected);
  });

  it.each([[''], ['png'], ['image/'], ['image/png\r\nx: y'], ['text/plain; charset="a\nb"'], ['ïmage/png'], ['image/png; charset']])(
    'replaces %j with application/octet-stream',
    (value) => {
      expect(normalizeMediaType(value)).toBe('application/octet-stream');
    },
  );
});

describe('toAttachmentRefs', () => {
  it('keeps only well-formed references, and only their four fields', () => {
    expect(
      toAttachmentRefs([
        { id: 'att_a', mediaType: 'image/png', bytes: 3, name: 'a.png', data: 'iVBORw0KGgo=' },
        { id: 'att_b', mediaType: 'text/plain', bytes: 0 },
        { id: 'att_c', mediaType: 'image/png', bytes: -1 },
        { id: 'att_d', mediaType: 'image/png', bytes: '3' },
        { id: 7, mediaType: 'image/png', bytes: 3 },
        null,
        'att_e',
      ]),
    ).toEqual([
      { id: 'att_a', mediaType: 'image/png', bytes: 3, name: 'a.png' },
      { id: 'att_b', mediaType: 'text/plain', bytes: 0 },
    ]);
  });

  it('answers none for anything but an array', () => {
    expect(toAttachmentRefs(undefined)).toEqual([]);
    expect(toAttachmentRefs({ id: 'att_a', mediaType: 'image/png', bytes: 3 })).toEqual([]);
  });
});
