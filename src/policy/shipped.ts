/**
 * The policy set shipped with the package (`<package>/policies`, beside
 * `src/` and `dist/`), found from this file rather than the working
 * directory: hosts and gateways start the stdio commands from anywhere.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const SHIPPED_POLICY_DIR = fileURLToPath(new URL('../../policies', import.meta.url));

/**
 * The policy folder of a `trustgate` command given none (TRUSTGATE_POLICY_DIR
 * unset): `./policies` when the working directory has one, as the service
 * has always read it, else the shipped set, so that every verb works from a
 * global install run anywhere.
 */
export function commandPolicyDir(): string {
  return existsSync('./policies') ? './policies' : SHIPPED_POLICY_DIR;
}
