import type { Activity, EventsPage, NewSession, Session, SessionPage, StoredMessage, ToolEntry } from './wire';

/** An HTTP answer other than 2xx, with the server's message. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The HTTP API of one signed-in user: every request carries the token as a bearer token. A 401
 * means the token is no longer accepted; `onUnauthorized` is told, and the call fails.
 */
export class HarnessApi {
  constructor(
    private readonly token: string,
    private readonly onUnauthorized: () => void = () => undefined,
  ) {}

  listSessions(limit: number, before?: number): Promise<SessionPage> {
    const query = new URLSearchParams({ limit: String(limit) });
    if (before !== undefined) query.set('before', String(before));
    return this.json<SessionPage>('GET', `/api/sessions?${query}`);
  }

  getSession(id: number): Promise<Session> {
    return this.json<Session>('GET', `/api/sessions/${id}`);
  }

  /**
   * Whether a run of the session is going. The list answers it: the first session before
   * `id + 1`, newest first, is the session itself.
   */
  async isRunActive(id: number): Promise<boolean> {
    const page = await this.listSessions(1, id + 1);
    return page.sessions[0]?.id === id && page.sessions[0].activeRun === true;
  }

  createSession(body: NewSession): Promise<Session> {
    return this.json<Session>('POST', '/api/sessions', body);
  }

  async deleteSession(id: number): Promise<void> {
    await this.request('DELETE', `/api/sessions/${id}`);
  }

  sendMessage(id: number, content: string): Promise<{ executionId: string }> {
    return this.json('POST', `/api/sessions/${id}/messages`, { content });
  }

  cancelRun(id: number): Promise<{ cancelled: boolean }> {
    return this.json('POST', `/api/sessions/${id}/cancel`);
  }

  messages(id: number): Promise<StoredMessage[]> {
    return this.json('GET', `/api/sessions/${id}/messages`);
  }

  activities(id: number): Promise<Activity[]> {
    return this.json('GET', `/api/sessions/${id}/activities`);
  }

  events(id: number, after: number): Promise<EventsPage> {
    return this.json('GET', `/api/sessions/${id}/events?after=${after}&limit=1000`);
  }

  tools(sessionId?: number): Promise<ToolEntry[]> {
    return this.json('GET', sessionId === undefined ? '/api/tools' : `/api/tools?sessionId=${sessionId}`);
  }

  /** An attachment's bytes (images are shown from a blob URL: an `<img>` cannot send the token). */
  async attachment(sessionId: number, attachmentId: string): Promise<Blob> {
    const response = await this.request('GET', `/api/sessions/${sessionId}/attachments/${encodeURIComponent(attachmentId)}`);
    return response.blob();
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.request(method, path, body);
    return (await response.json()) as T;
  }

  private async request(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (response.ok) return response;
    if (response.status === 401) this.onUnauthorized();
    throw new ApiError(response.status, await messageOf(response));
  }
}

async function messageOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const message = (JSON.parse(text) as { message?: unknown }).message;
    if (Array.isArray(message)) return message.join('; ');
    if (typeof message === 'string') return message;
  } catch {
    // not JSON: the text itself, or the status
  }
  return text.trim() || `HTTP ${response.status}`;
}
