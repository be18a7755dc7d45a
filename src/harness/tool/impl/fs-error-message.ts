import { errorMessage } from '../../runtime/error-message';

/**
 * A file-system failure phrased for the model, naming the workspace-relative path rather than
 * the server's absolute one (which the model should neither see nor reuse).
 */
export function describeFsError(error: unknown, relativePath: string): string {
  switch ((error as NodeJS.ErrnoException | null)?.code) {
    case 'ENOENT':
      return `no such file or directory: '${relativePath}'`;
    case 'EISDIR':
      return `'${relativePath}' is a directory`;
    case 'ENOTDIR':
      return `a parent of '${relativePath}' is not a directory`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied: '${relativePath}'`;
    case 'EEXIST':
      return `'${relativePath}' already exists and is in the way`;
    default:
      return `cannot access '${relativePath}': ${stripAbsolutePaths(errorMessage(error))}`;
  }
}

/** Node's fs messages end with the absolute path in quotes; keep only the reason. */
function stripAbsolutePaths(message: string): string {
  return message.replace(/,?\s*\w+\s+'\/[^']*'/g, '').trim();
}
