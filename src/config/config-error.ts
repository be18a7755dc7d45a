/**
 * A configuration value that cannot be used. The message is one line that starts with the
 * variable (`LLM_SCRIPT: rounds[0].content: expected a string`): the server prints it as it is.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    message: string,
  ) {
    // A value quoted in the message may hold line breaks; they are shown escaped.
    super(`${variable}: ${message}`.replace(/\r\n|\r|\n/g, '\\n'));
  }
}
