import { constants as fsConstants } from 'node:fs';
import { createFileBeneath } from './workspace-open';

/** Where the whole text of a budgeted result is kept in a server workspace (docs/tool-contract.md). */
export const FULL_OUTPUT_DIRECTORY = '.harness/tool-output';

/**
 * Writes the whole text of a result that was too long for the model into the session workspace,
 * so `read_file` can page through it; returns its path relative to the workspace. Opened as the
 * file tools open paths (no link followed on the way), so a link planted at
 * `.harness` cannot lead the write out of the workspace.
 */
export async function saveFullOutput(workspace: string, callId: string, text: string): Promise<string> {
  const relative = `${FULL_OUTPUT_DIRECTORY}/${callId.replace(/[^A-Za-z0-9_.-]/g, '_')}.txt`;
  const file = await createFileBeneath(workspace, relative, fsConstants.O_WRONLY | fsConstants.O_TRUNC);
  try {
    file.writeText(text);
  } finally {
    file.close();
  }
  return relative;
}
