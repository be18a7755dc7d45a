/** `PATH` of the commands when the server has none. */
export const DEFAULT_SHELL_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Variables of the server copied to the commands when set: the search path, locale and time zone. */
const BASE_VARIABLES = ['PATH', 'LANG', 'LC_ALL', 'TZ'] as const;

/**
 * The environment `shell` commands start from: an allow-list, never the server's whole
 * environment, so that tokens, keys and whatever else the server was given stay out of reach of
 * the commands a model runs. It holds `PATH` (the server's, else `DEFAULT_SHELL_PATH`), `LANG`,
 * `LC_ALL` and `TZ` when the server has them, and the variables named in `passNames`
 * (`HARNESS_SHELL_ENV`) that the server has. `ShellTool` adds `HOME`, `TERM` and the session and
 * user ids to each call.
 */
export function shellEnvironment(serverEnv: NodeJS.ProcessEnv, passNames: readonly string[] = []): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: DEFAULT_SHELL_PATH };
  for (const name of [...BASE_VARIABLES, ...passNames]) {
    const value = serverEnv[name];
    if (value !== undefined && value !== '') env[name] = value;
  }
  return env;
}
