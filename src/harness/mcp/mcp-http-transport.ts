import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type RequestId } from '@modelcontextprotocol/sdk/types.js';

/** `data` of the error a request gets when the connection that was to carry its answer broke. */
interface ConnectionLostData {
  connectionLost: string;
}

/**
 * The SDK's Streamable HTTP client transport, made to notice a lost connection.
 *
 * A request's answer comes back on the SSE stream of the POST that sent it. When that stream
 * breaks off (the server process died, the connection was reset), the SDK (1.x) only reports the
 * break to `onerror`; the request itself stays pending until its timeout, which may be minutes
 * away. Here the fetch the transport uses watches those streams: when one breaks, the requests
 * its POST carried are answered at once with a `ConnectionClosed` JSON-RPC error whose `data`
 * says the connection was lost (`connectionLostReason` reads it back). A POST that fails outright
 * after the handshake gets the same error.
 *
 * The answer is delivered a turn after the break, so whatever the stream had already delivered
 * is read first; a request that was answered before the break is unknown to the client by then
 * and the late error is ignored. A broken stream is not resumed: the client is dropped and the
 * next call connects again, which also covers a server that came back without its sessions.
 */
export function createMcpHttpTransport(url: URL): StreamableHTTPClientTransport {
  let transport: StreamableHTTPClientTransport | undefined;
  const answerLost = (ids: RequestId[], reason: string): void => {
    for (const id of ids) {
      const data: ConnectionLostData = { connectionLost: reason };
      transport?.onmessage?.({ jsonrpc: '2.0', id, error: { code: ErrorCode.ConnectionClosed, message: `Connection lost: ${reason}`, data } });
    }
  };
  transport = new StreamableHTTPClientTransport(url, { fetch: watchingFetch(answerLost) });
  return transport;
}

/** Why the connection was lost, if `error` is the failure of a request whose connection broke. */
export function connectionLostReason(error: unknown): string | undefined {
  if (!(error instanceof McpError) || error.code !== ErrorCode.ConnectionClosed) return undefined;
  const data: unknown = error.data;
  if (typeof data !== 'object' || data === null) return undefined;
  const reason = (data as Partial<ConnectionLostData>).connectionLost;
  return typeof reason === 'string' ? reason : undefined;
}

function watchingFetch(answerLost: (ids: RequestId[], reason: string) => void): FetchLike {
  return async (url, init) => {
    const ids = requestIdsAfterHandshake(init?.body);
    if (ids.length === 0) return fetch(url, init);
    let response: Response;
    try {
      response = await fetch(url, init);
    } catch (error) {
      // An aborted fetch is the client closing, which fails its requests itself.
      if (init?.signal?.aborted) throw error;
      const reason = describe(error);
      throw new McpError(ErrorCode.ConnectionClosed, `Connection lost: ${reason}`, { connectionLost: reason } satisfies ConnectionLostData);
    }
    // Answers sent as one JSON body arrive with the headers; only an event stream can break off midway.
    if (!response.ok || response.body === null || !isEventStream(response)) return response;
    const body = watchBody(response.body, (error) => {
      if (init?.signal?.aborted) return;
      const reason = describe(error);
      setImmediate(() => answerLost(ids, reason));
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/**
 * A copy of `body` that ends normally when `body` breaks off, after telling `onBroken`: the SDK
 * reads what arrived before the break, and the requests are answered by `onBroken`'s caller.
 */
function watchBody(body: ReadableStream<Uint8Array>, onBroken: (error: unknown) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        onBroken(error);
        controller.close();
        return;
      }
      if (chunk.done) controller.close();
      else controller.enqueue(chunk.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/** The ids of the requests in a POST body; none for notifications, responses and the handshake. */
function requestIdsAfterHandshake(body: unknown): RequestId[] {
  if (typeof body !== 'string') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  const messages: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
  const ids: RequestId[] = [];
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (typeof method !== 'string' || (typeof id !== 'string' && typeof id !== 'number')) continue;
    // A failed handshake is reported as a failure to connect, not as a lost connection.
    if (method === 'initialize') return [];
    ids.push(id);
  }
  return ids;
}

function isEventStream(response: Response): boolean {
  return (response.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase() === 'text/event-stream';
}

/**
 * fetch reports "terminated" or "fetch failed" and keeps the useful part (other side closed,
 * ECONNREFUSED) in `cause`. Read by shape: fetch's errors may come from another realm.
 */
function describe(error: unknown): string {
  const message = messageOf(error);
  if (message === undefined) return String(error);
  const cause = messageOf((error as { cause?: unknown }).cause);
  return cause && cause !== message ? `${message}: ${cause}` : message;
}

function messageOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { message } = error as { message?: unknown };
  return typeof message === 'string' ? message : undefined;
}
