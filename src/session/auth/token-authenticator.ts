/** Maps bearer tokens to user ids (interface.md, "Authentication"). */
export class TokenAuthenticator {
  constructor(private readonly tokens: ReadonlyMap<string, number>) {}

  /** The user a token belongs to, or `undefined` for a missing or unknown token. */
  userFor(token: string | null | undefined): number | undefined {
    if (!token) return undefined;
    return this.tokens.get(token);
  }

  /** Reads `Authorization: Bearer <token>`. */
  userForAuthorizationHeader(header: string | string[] | undefined): number | undefined {
    const value = Array.isArray(header) ? header[0] : header;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(value ?? '');
    return this.userFor(match?.[1]);
  }
}
