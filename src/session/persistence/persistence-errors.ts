/**
 * Our own code tried to store a value the schema does not allow (an unknown role, status or
 * mode). Input from clients and models is validated at the edge; reaching this is a bug.
 */
export class InvalidRecordError extends Error {
  override readonly name = 'InvalidRecordError';
  constructor(
    readonly field: string,
    readonly value: unknown,
    allowed: readonly string[],
  ) {
    super(`${field}: expected one of ${allowed.join(', ')}, got ${describeValue(value)}`);
  }
}

/** The database file was written by a newer Harness whose schema this build does not know. */
export class SchemaVersionError extends Error {
  override readonly name = 'SchemaVersionError';
  constructor(
    readonly found: number,
    readonly supported: number,
  ) {
    super(`database schema version ${found} is newer than the supported version ${supported}`);
  }
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  return value === undefined ? 'undefined' : String(JSON.stringify(value) ?? value);
}
