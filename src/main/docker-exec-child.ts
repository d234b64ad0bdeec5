/**
 * The evaluating half of `trustgate intercept` (see docker-exec.ts):
 * run as its own Node process by the guard, it reads one CallToolResult on
 * stdin, decides with the policies in TRUSTGATE_POLICY_DIR (an absolute
 * path the guard resolved), and writes one framed answer on stdout:
 *
 *   `pass\n`                  the original may pass (the guard writes nothing)
 *   `replace\n<JSON object>`  the replacement CallToolResult
 *
 * The frame lets the guard tell "decided: pass" from "died before it said
 * anything": whatever this process does not finish (a crash, an
 * out-of-memory, a signal) ends with no complete frame and a non-zero
 * exit, and the guard answers an `isError` result. The decision log goes
 * to stderr, which the guard shares. Configuration and logger come from the
 * one start-up (start.ts); here a bad setting or a policy folder that does
 * not load is an answer (an `isError` result), not an exit.
 */
import { ConfigError } from '../config.js';
import { TrustgateError } from '../errors.js';
import { parseRequestText } from '../json/parse.js';
import { readConfig, stderrLogger } from './start.js';
import { isRecord } from '../json/record.js';
import { loadPolicyDir } from '../policy/load.js';
import { FRAME_PASS, FRAME_REPLACE, interceptAnswer, interceptError, type InterceptAnswer } from '../bindings/docker-gateway/answer.js';
import { createDecisionCore } from '../decision/core.js';

async function readStdin(limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > limit) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function frame(answer: InterceptAnswer): string {
  return answer.kind === 'pass' ? FRAME_PASS : FRAME_REPLACE + JSON.stringify(answer.result);
}

async function decide(): Promise<InterceptAnswer> {
  let config;
  try {
    config = readConfig();
  } catch (err) {
    return interceptError('TG_ERR_SERVER_NOT_READY', err instanceof ConfigError ? err.message : 'configuration error');
  }
  const log = stderrLogger(config);
  let policies;
  try {
    policies = await loadPolicyDir(config.policyDir, config.serversFile);
  } catch (err) {
    log.error(`policy load failed: ${(err as Error).message}`);
    return interceptError('TG_ERR_SERVER_NOT_READY', 'the policies did not load');
  }
  const text = await readStdin(config.bodyLimit);
  if (text === undefined) return interceptError('TG_ERR_BODY_TOO_LARGE', `the result is over the limit of ${config.bodyLimit} bytes`);
  try {
    const { value, scan } = parseRequestText(text);
    if (!isRecord(value)) return interceptError('TG_ERR_BODY_SCHEMA', 'the input is not a JSON object');
    // No session store here: the gateway names no session, so the core decides without one (a core with no store).
    const core = createDecisionCore({ config, policies: () => policies });
    const decision = await core.evaluateResult({ request: { result: value }, scan, log: (entry) => log.info(entry, 'decision') });
    return interceptAnswer(decision, scan.duplicateKeys.count > 0);
  } catch (err) {
    if (err instanceof TrustgateError) return interceptError(err.code, err.message);
    log.error({ errName: (err as Error)?.name }, 'unexpected error');
    return interceptError('TG_ERR_SERVER_INTERNAL', 'internal error');
  }
}

const answer = await decide();
// Exit only once the frame is flushed: the guard reads exit 0 as "the frame is whole".
process.stdout.write(frame(answer), () => process.exit(0));
