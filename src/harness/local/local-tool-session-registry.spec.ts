import type { ClientEvent } from './client-event';
import type { ExecutionIdSource } from './execution-id-source';
import { LocalConnections } from './local-connections';
import { ConnectionsManagedElsewhereError, LocalClientDisconnectedError, LocalRunCancelledError, NoConnectedClientError } from './local-errors';
import { LocalToolSessionRegistry } from './local-tool-session-registry';

const OWNER = 7;
const OTHER_USER = 8;
const SESSION = 42;

/** A fake client connection: records what it was sent. */
function fakeClient() {
  const events: ClientEvent[] = [];
  return { events, send: (event: ClientEvent) => void events.push(event) };
}

/** The run the test's code is in, as the execution scope would report it. */
let currentRun: string | undefined;
const executions: ExecutionIdSource = { currentExecutionId: () => currentRun };

/** Runs `fn` as code of the run `executionId`. */
function inRun<T>(executionId: string, fn: () => T): T {
  currentRun = executionId;
  try {
    return fn();
  } finally {
    currentRun = undefined;
  }
}

function createRegistry() {
  let next = 1;
  return new LocalToolSessionRegistry({ now: () => 1_000, newId: () => `req-${next++}`, executions });
}

function toolRequest(overrides: Partial<Parameters<LocalToolSessionRegistry['sendToolRequest']>[1]> = {}) {
  return { toolName: 'read_file', argumentsJson: '{"path":"a.txt"}', workspace: '/ws', needApproval: false, dangerReason: null, ...overrides };
}

describe('LocalToolSessionRegistry', () => {
  let registry: LocalToolSessionRegistry;
  beforeEach(() => {
    registry = createRegistry();
    registry.bindSession(SESSION, OWNER);
  });

  describe('sendToolRequest', () => {
    it('delivers the tool_request event to every connection of the owner and to no other user', () => {
      const desktop = fakeClient();
      const laptop = fakeClient();
      const stranger = fakeClient();
      registry.addConnection('c1', OWNER, desktop.send);
      registry.addConnection('c2', OWNER, laptop.send);
      registry.addConnection('c3', OTHER_USER, stranger.send);

      const { requestId } = registry.sendToolRequest(SESSION, toolRequest({ needApproval: true, dangerReason: 'writes files' }));

      const expected: ClientEvent = {
        type: 'tool_request',
        sessionId: SESSION,
        timestamp: 1_000,
        data: {
          requestId,
          toolName: 'read_file',
          arguments: '{"path":"a.txt"}',
          workspace: '/ws',
          needApproval: true,
          dangerReason: 'writes files',
        },
      };
      expect(desktop.events).toEqual([expected]);
      expect(laptop.events).toEqual([expected]);
      expect(stranger.events).toEqual([]);
      expect(registry.pendingCount()).toBe(1);
      expect(registry.sessionOfRequest(requestId)).toBe(SESSION);
    });

    it('passes the arguments string through as-is, even when it is not valid JSON', () => {
      const client = fakeClient();
      registry.addConnection('c1', OWNER, client.send);
      registry.sendToolRequest(SESSION, toolRequest({ argumentsJson: '{not json' }));
      expect(client.events[0].data.arguments).toBe('{not json');
    });

    it('throws NoConnectedClientError when the owner has no connection', () => {
      registry.addConnection('c3', OTHER_USER, fakeClient().send);
      expect(() => registry.sendToolRequest(SESSION, toolRequest())).toThrow(NoConnectedClientError);
      expect(registry.pendingCount()).toBe(0);
    });

    it('throws NoConnectedClientError for a session that was never bound', () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      expect(() => registry.sendToolRequest(999, toolRequest())).toThrow('No connected desktop client for session 999');
    });

    it('treats a throwing sink as not delivered and still reaches the other connections', async () => {
      const working = fakeClient();
      registry.addConnection('broken', OWNER, () => {
        throw new Error('socket closed');
      });
      registry.addConnection('ok', OWNER, working.send);

      const { requestId, promise } = registry.sendToolRequest(SESSION, toolRequest());

      expect(working.events).toHaveLength(1);
      // Only the working connection received it, so losing it alone orphans the request.
      registry.removeConnection('ok');
      expect(registry.sessionOfRequest(requestId)).toBeUndefined();
      await expect(promise).rejects.toBeInstanceOf(LocalClientDisconnectedError);
    });

    it('throws NoConnectedClientError when every sink throws', () => {
      registry.addConnection('broken', OWNER, () => {
        throw new Error('socket closed');
      });
      expect(() => registry.sendToolRequest(SESSION, toolRequest())).toThrow(NoConnectedClientError);
      expect(registry.pendingCount()).toBe(0);
    });

    it('accepts an answer given from inside the send', async () => {
      registry.addConnection('c1', OWNER, (event) => {
        registry.completeRequest(String(event.data.requestId), 'instant', OWNER);
      });
      const { promise } = registry.sendToolRequest(SESSION, toolRequest());
      await expect(promise).resolves.toBe('instant');
      expect(registry.pendingCount()).toBe(0);
    });
  });

  describe('completeRequest', () => {
    it('resolves the promise with the raw result when the owner answers', async () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      const { requestId, promise } = registry.sendToolRequest(SESSION, toolRequest());

      expect(registry.completeRequest(requestId, '{"content":"hi"}', OWNER)).toBe(true);

      await expect(promise).resolves.toBe('{"content":"hi"}');
      expect(registry.pendingCount()).toBe(0);
      expect(registry.sessionOfRequest(requestId)).toBeUndefined();
    });

    it('refuses an answer from another user and leaves the request pending', async () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      const { requestId, promise } = registry.sendToolRequest(SESSION, toolRequest());

      expect(registry.completeRequest(requestId, 'forged', OTHER_USER)).toBe(false);
      expect(registry.pendingCount()).toBe(1);

      registry.completeRequest(requestId, 'genuine', OWNER);
      await expect(promise).resolves.toBe('genuine');
    });

    it('returns false for an unknown request id', () => {
      expect(registry.completeRequest('nope', 'x', OWNER)).toBe(false);
    });

    it('returns false for a request answered twice, keeping the first answer', async () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      const { requestId, promise } = registry.sendToolRequest(SESSION, toolRequest());
      registry.completeRequest(requestId, 'first', OWNER);
      expect(registry.completeRequest(requestId, 'second', OWNER)).toBe(false);
      await expect(promise).resolves.toBe('first');
    });

    it('refuses a request id that looks like an Object.prototype key', () => {
      expect(registry.completeRequest('__proto__', 'x', OWNER)).toBe(false);
      expect(registry.sessionOfRequest('constructor')).toBeUndefined();
    });
  });

  describe('failRequest', () => {
    it('rejects the promise with an Error carrying the reason', async () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      const { requestId, promise } = registry.sendToolRequest(SESSION, toolRequest());
      expect(registry.failRequest(requestId, 'run cancelled')).toBe(true);
      await expect(promise).rejects.toThrow('run cancelled');
      expect(registry.pendingCount()).toBe(0);
      expect(registry.failRequest(requestId, 'again')).toBe(false);
    });

    it('fails every pending request of a session with failSession, leaving other sessions alone', async () => {
      registry.bindSession(43, OWNER);
      registry.addConnection('c1', OWNER, fakeClient().send);
      const first = registry.sendToolRequest(SESSION, toolRequest());
      const second = registry.sendToolRequest(SESSION, toolRequest());
      const other = registry.sendToolRequest(43, toolRequest());

      expect(registry.failSession(SESSION, 'cancelled')).toEqual([first.requestId, second.requestId]);

      await expect(first.promise).rejects.toThrow('cancelled');
      await expect(second.promise).rejects.toThrow('cancelled');
      expect(registry.sessionOfRequest(other.requestId)).toBe(43);
    });
  });

  describe('tool_request_cancelled', () => {
    it('tells the connections that received a failed request, with the reason and the run', async () => {
      const desktop = fakeClient();
      const stranger = fakeClient();
      registry.addConnection('c1', OWNER, desktop.send);
      registry.addConnection('c3', OTHER_USER, stranger.send);
      const { requestId, promise } = inRun('run-1', () => registry.sendToolRequest(SESSION, toolRequest()));

      registry.failRequest(requestId, 'timed out');

      await expect(promise).rejects.toThrow('timed out');
      expect(desktop.events.map((event) => event.type)).toEqual(['tool_request', 'tool_request_cancelled']);
      expect(desktop.events[1]).toEqual({
        type: 'tool_request_cancelled',
        sessionId: SESSION,
        timestamp: 1_000,
        data: { requestId, reason: 'timed out', executionId: 'run-1' },
      });
      expect(stranger.events).toEqual([]);
    });

    it('is sent for every request failSession fails, and a failing socket does not stop the rest', async () => {
      const broken = { events: [] as ClientEvent[], fail: false };
      registry.addConnection('c1', OWNER, (event) => {
        if (broken.fail) throw new Error('socket closed');
        broken.events.push(event);
      });
      const laptop = fakeClient();
      registry.addConnection('c2', OWNER, laptop.send);
      const first = registry.sendToolRequest(SESSION, toolRequest());
      const second = registry.sendToolRequest(SESSION, toolRequest());
      broken.fail = true;

      registry.failSession(SESSION, 'cancelled');

      await expect(first.promise).rejects.toThrow('cancelled');
      await expect(second.promise).rejects.toThrow('cancelled');
      const withdrawn = laptop.events.filter((event) => event.type === 'tool_request_cancelled');
      expect(withdrawn.map((event) => event.data)).toEqual([
        { requestId: first.requestId, reason: 'cancelled' },
        { requestId: second.requestId, reason: 'cancelled' },
      ]);
    });

    it("is sent to the owner's other connections when one of them answers, not to the one that did", async () => {
      const desktop = fakeClient();
      const laptop = fakeClient();
      registry.addConnection('c1', OWNER, desktop.send);
      registry.addConnection('c2', OWNER, laptop.send);
      const { requestId, promise } = registry.sendToolRequest(SESSION, toolRequest({ needApproval: true }));

      expect(registry.completeRequest(requestId, 'approved and done', OWNER, 'c1')).toBe(true);

      await expect(promise).resolves.toBe('approved and done');
      expect(desktop.events.map((event) => event.type)).toEqual(['tool_request']);
      expect(laptop.events.map((event) => [event.type, event.data])).toEqual([
        ['tool_request', expect.objectContaining({ requestId })],
        ['tool_request_cancelled', { requestId, reason: 'answered by another client' }],
      ]);
    });

    it('is not sent for an answered request', async () => {
      const desktop = fakeClient();
      registry.addConnection('c1', OWNER, desktop.send);
      const { requestId, promise } = registry.sendToolRequest(SESSION, toolRequest());
      registry.completeRequest(requestId, 'ok', OWNER);
      await expect(promise).resolves.toBe('ok');
      registry.failSession(SESSION, 'cancelled');
      expect(desktop.events.map((event) => event.type)).toEqual(['tool_request']);
    });
  });

  describe('sendWatched', () => {
    it('calls onGone once, when the last connection that accepted the event closes', () => {
      const gone = jest.fn();
      registry.addConnection('c1', OWNER, fakeClient().send);
      registry.addConnection('c2', OWNER, fakeClient().send);
      const delivery = registry.sendWatched(SESSION, 'ask_user_questions', { requestId: 'q1' }, gone);
      expect(delivery.delivered).toBe(2);

      registry.addConnection('c3', OWNER, fakeClient().send);
      registry.removeConnection('c1');
      expect(gone).not.toHaveBeenCalled();
      registry.removeConnection('c2');
      expect(gone).toHaveBeenCalledTimes(1);
      registry.removeConnection('c3');
      expect(gone).toHaveBeenCalledTimes(1);
    });

    it('does not call onGone after release', () => {
      const gone = jest.fn();
      registry.addConnection('c1', OWNER, fakeClient().send);
      registry.sendWatched(SESSION, 'ask_user_questions', {}, gone).release();
      registry.removeConnection('c1');
      expect(gone).not.toHaveBeenCalled();
    });

    it('watches nothing when no connection accepted the event', () => {
      const gone = jest.fn();
      expect(registry.sendWatched(SESSION, 'ask_user_questions', {}, gone).delivered).toBe(0);
      expect(gone).not.toHaveBeenCalled();
    });

    it('calls onGone at once when the only receiving connection closed while being sent to', () => {
      const gone = jest.fn();
      registry.addConnection('c1', OWNER, () => registry.removeConnection('c1'));
      expect(registry.sendWatched(SESSION, 'ask_user_questions', {}, gone).delivered).toBe(1);
      expect(gone).toHaveBeenCalledTimes(1);
    });
  });

  describe('cancelRun', () => {
    it('fails the pending requests and refuses, without sending, every later request of that run', async () => {
      const desktop = fakeClient();
      registry.addConnection('c1', OWNER, desktop.send);
      const pending = inRun('run-1', () => registry.sendToolRequest(SESSION, toolRequest()));

      expect(registry.cancelRun(SESSION, 'run-1', 'the run was cancelled')).toEqual([pending.requestId]);
      await expect(pending.promise).rejects.toThrow('the run was cancelled');

      const sentBefore = desktop.events.length;
      expect(() => inRun('run-1', () => registry.sendToolRequest(SESSION, toolRequest()))).toThrow(LocalRunCancelledError);
      expect(() => inRun('run-1', () => registry.sendToolRequest(SESSION, toolRequest()))).toThrow(
        'Not sent to the desktop: the run was cancelled',
      );
      expect(desktop.events).toHaveLength(sentBefore);
      expect(registry.pendingCount()).toBe(0);
    });

    it('lets the next run of the session, and requests outside any run, through', async () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      registry.cancelRun(SESSION, 'run-1', 'the run was cancelled');
      const next = inRun('run-2', () => registry.sendToolRequest(SESSION, toolRequest()));
      const outside = registry.sendToolRequest(SESSION, toolRequest());
      expect(registry.sessionOfRequest(next.requestId)).toBe(SESSION);
      expect(registry.sessionOfRequest(outside.requestId)).toBe(SESSION);
    });

    it('without a run id only fails what is pending', async () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      const pending = registry.sendToolRequest(SESSION, toolRequest());
      expect(registry.cancelRun(SESSION, undefined, 'cancelled')).toEqual([pending.requestId]);
      await expect(pending.promise).rejects.toThrow('cancelled');
      expect(() => registry.sendToolRequest(SESSION, toolRequest())).not.toThrow();
    });
  });

  describe('when connections close', () => {
    it('fails a request whose only receiving connection closed', async () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      const { requestId, promise } = registry.sendToolRequest(SESSION, toolRequest({ toolName: 'shell' }));

      registry.removeConnection('c1');

      await expect(promise).rejects.toBeInstanceOf(LocalClientDisconnectedError);
      await expect(promise).rejects.toThrow("Desktop client disconnected while running 'shell'");
      expect(registry.pendingCount()).toBe(0);
      expect(registry.completeRequest(requestId, 'late', OWNER)).toBe(false);
    });

    it('keeps a request alive while another receiving connection of the owner stays open', async () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      registry.addConnection('c2', OWNER, fakeClient().send);
      const { requestId, promise } = registry.sendToolRequest(SESSION, toolRequest());

      registry.removeConnection('c1');
      expect(registry.pendingCount()).toBe(1);

      registry.completeRequest(requestId, 'from c2', OWNER);
      await expect(promise).resolves.toBe('from c2');
    });

    it('fails the request when a connection that opened after it was sent is the only one left', async () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      const { promise } = registry.sendToolRequest(SESSION, toolRequest());
      registry.addConnection('c2', OWNER, fakeClient().send);

      registry.removeConnection('c1');

      await expect(promise).rejects.toBeInstanceOf(LocalClientDisconnectedError);
    });

    it('leaves requests of other users untouched', () => {
      registry.bindSession(50, OTHER_USER);
      registry.addConnection('c1', OWNER, fakeClient().send);
      registry.addConnection('c3', OTHER_USER, fakeClient().send);
      const { requestId } = registry.sendToolRequest(50, toolRequest());

      registry.removeConnection('c1');

      expect(registry.sessionOfRequest(requestId)).toBe(50);
    });

    it('treats a connection that closes from inside send as a disconnection', async () => {
      registry.addConnection('c1', OWNER, () => registry.removeConnection('c1'));
      const { promise } = registry.sendToolRequest(SESSION, toolRequest());
      await expect(promise).rejects.toBeInstanceOf(LocalClientDisconnectedError);
      expect(registry.pendingCount()).toBe(0);
    });

    it('replaces a connection re-added under the same id, failing what only the old one received', async () => {
      const replacement = fakeClient();
      registry.addConnection('c1', OWNER, fakeClient().send);
      const { promise } = registry.sendToolRequest(SESSION, toolRequest());

      registry.addConnection('c1', OWNER, replacement.send);

      await expect(promise).rejects.toBeInstanceOf(LocalClientDisconnectedError);
      expect(registry.sendToSession(SESSION, 'ping', {})).toBe(1);
      expect(replacement.events.map((event) => event.type)).toEqual(['ping']);
    });

    it('does not crash the process when the caller dropped the promise of a disconnected request', async () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      registry.sendToolRequest(SESSION, toolRequest());
      registry.removeConnection('c1');
      // An unhandled rejection would fail the test run; give it a turn to surface.
      await new Promise((resolve) => setImmediate(resolve));
      expect(registry.pendingCount()).toBe(0);
    });

    it('ignores removing an unknown connection', () => {
      expect(() => registry.removeConnection('ghost')).not.toThrow();
    });
  });

  describe('inside a run', () => {
    it("stamps the events with the run's executionId, unless the data names one", () => {
      const client = fakeClient();
      registry.addConnection('c1', OWNER, client.send);
      inRun('run-1', () => {
        registry.sendToSession(SESSION, 'ask_user_questions', { requestId: 'q1' });
        registry.sendToSession(SESSION, 'ask_user_questions_cancelled', { requestId: 'q1', executionId: 'own' });
        registry.sendToolRequest(SESSION, toolRequest());
      });
      expect(client.events.map((event) => event.data.executionId)).toEqual(['run-1', 'own', 'run-1']);
    });

    it('without an execution source, takes every call for one outside a run', () => {
      const plain = new LocalToolSessionRegistry();
      const client = fakeClient();
      plain.bindSession(SESSION, OWNER);
      plain.addConnection('c1', OWNER, client.send);
      plain.cancelRun(SESSION, 'run-1', 'the run was cancelled');
      inRun('run-1', () => plain.sendToolRequest(SESSION, toolRequest()));
      expect(client.events).toHaveLength(1);
      expect(client.events[0].data).not.toHaveProperty('executionId');
    });
  });

  describe('when built on client connections it was given', () => {
    function setupOnClients() {
      const clients = new LocalConnections();
      const onClients = new LocalToolSessionRegistry({ clients, now: () => 1_000, newId: () => 'req-1' });
      onClients.bindSession(SESSION, OWNER);
      return { clients, onClients };
    }

    it('sends through them and fails a request once its only receiving connection closes there', async () => {
      const { clients, onClients } = setupOnClients();
      const desktop = fakeClient();
      clients.add('c1', OWNER, desktop.send);

      const { promise } = onClients.sendToolRequest(SESSION, toolRequest());
      expect(desktop.events.map((event) => event.type)).toEqual(['tool_request']);
      clients.remove('c1');

      await expect(promise).rejects.toBeInstanceOf(LocalClientDisconnectedError);
      expect(onClients.isBuiltOn(clients)).toBe(true);
    });

    it('refuses to add or remove connections itself', () => {
      const { onClients } = setupOnClients();
      expect(() => onClients.addConnection('c1', OWNER, fakeClient().send)).toThrow(ConnectionsManagedElsewhereError);
      expect(() => onClients.removeConnection('c1')).toThrow(ConnectionsManagedElsewhereError);
    });

    it('is not built on them when it keeps its own', () => {
      expect(registry.isBuiltOn(new LocalConnections())).toBe(false);
    });
  });

  describe('sendToSession and hasConnection', () => {
    it('counts the connections that accepted the event', () => {
      const client = fakeClient();
      registry.addConnection('c1', OWNER, client.send);
      registry.addConnection('c2', OWNER, () => {
        throw new Error('closed');
      });
      registry.addConnection('c3', OTHER_USER, fakeClient().send);

      expect(registry.sendToSession(SESSION, 'ask_user_questions', { requestId: 'q1' })).toBe(1);
      expect(client.events).toEqual([{ type: 'ask_user_questions', sessionId: SESSION, data: { requestId: 'q1' }, timestamp: 1_000 }]);
    });

    it('sends nothing for an unbound session', () => {
      registry.addConnection('c1', OWNER, fakeClient().send);
      expect(registry.sendToSession(999, 'x', {})).toBe(0);
      expect(registry.hasConnection(999)).toBe(false);
    });

    it('reports whether the owner is connected', () => {
      expect(registry.hasConnection(SESSION)).toBe(false);
      registry.addConnection('c3', OTHER_USER, fakeClient().send);
      expect(registry.hasConnection(SESSION)).toBe(false);
      registry.addConnection('c1', OWNER, fakeClient().send);
      expect(registry.hasConnection(SESSION)).toBe(true);
      registry.removeConnection('c1');
      expect(registry.hasConnection(SESSION)).toBe(false);
    });

    it('knows the owner of a bound session', () => {
      expect(registry.ownerOf(SESSION)).toBe(OWNER);
      expect(registry.ownerOf(999)).toBeUndefined();
    });
  });
});
