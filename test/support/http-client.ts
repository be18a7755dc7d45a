/** An HTTP answer: status, parsed JSON body (or null), and the raw text. */
export interface HttpAnswer<T = any> {
  status: number;
  body: T;
  text: string;
}

/** A request body sent exactly as given (for malformed JSON); build it with `rawBody`. */
export class RawBody {
  constructor(readonly text: string) {}
}

export function rawBody(text: string): RawBody {
  return new RawBody(text);
}

/** Calls the harness over real HTTP as one user (or as nobody, with `token` null). */
export class HttpClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string | null,
  ) {}

  get<T = any>(path: string): Promise<HttpAnswer<T>> {
    return this.request<T>('GET', path);
  }

  post<T = any>(path: string, body?: unknown): Promise<HttpAnswer<T>> {
    return this.request<T>('POST', path, body);
  }

  patch<T = any>(path: string, body?: unknown): Promise<HttpAnswer<T>> {
    return this.request<T>('PATCH', path, body);
  }

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer<T>> {
    const allHeaders: Record<string, string> = { ...headers };
    if (this.token !== null) allHeaders.authorization = `Bearer ${this.token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      allHeaders['content-type'] = 'application/json';
      payload = body instanceof RawBody ? body.text : JSON.stringify(body);
    }
    const response = await fetch(this.baseUrl + path, { method, headers: allHeaders, body: payload });
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = null;
    }
    return { status: response.status, body: parsed as T, text };
  }
}
