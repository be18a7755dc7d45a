/** Where the token is kept: this tab's session storage, gone when the tab closes. */
const TOKEN_KEY = 'harness.token';

export function loadToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function saveToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}
