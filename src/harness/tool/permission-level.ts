/** How much a session lets tools do without asking the user. */
export type PermissionLevel = 'READ_ONLY' | 'READ_WRITE' | 'SMART' | 'FULL';

export const PERMISSION_LEVELS: readonly PermissionLevel[] = ['READ_ONLY', 'READ_WRITE', 'SMART', 'FULL'];

export function isPermissionLevel(value: unknown): value is PermissionLevel {
  return typeof value === 'string' && (PERMISSION_LEVELS as readonly string[]).includes(value);
}

/** An unknown or missing level is the most careful one, `READ_ONLY`. */
export function parsePermissionLevel(value: string | null | undefined): PermissionLevel {
  return isPermissionLevel(value) ? value : 'READ_ONLY';
}
