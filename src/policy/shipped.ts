/**
 * The policy set shipped with the package (`<package>/policies`, beside
 * `src/` and `dist/`), found from this file rather than the working
 * directory: hosts and gateways start the stdio commands from anywhere.
 */
import { fileURLToPath } from 'node:url';

export const SHIPPED_POLICY_DIR = fileURLToPath(new URL('../../policies', import.meta.url));
