import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration (contract section 1)', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      policyDir: './policies',
      modeOverride: undefined,
      token: undefined,
      bodyLimit: 8388608,
      logLevel: 'info',
      maxValidationFindings: 1000,
      maxFindings: 1000,
      allowedOrigins: [],
      answerBufferBytes: 64 * 1024 * 1024,
      workers: 'auto',
      workerWatchdogMs: 30000,
      dialects: ['trust-annotations', 'ifc', 'fides'],
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['TRUSTGATE_BODY_LIMIT', '-1'],
    ['TRUSTGATE_BODY_LIMIT', '0'],
    ['TRUSTGATE_BODY_LIMIT', '1e6'],
    ['TRUSTGATE_MODE', 'enforce'],
    ['TRUSTGATE_MODE', 'AUDIT'],
    ['LOG_LEVEL', 'loud'],
    ['TRUSTGATE_MAX_BLOCKS', '0'],
    ['TRUSTGATE_MAX_VALIDATION_FINDINGS', '0'],
    ['TRUSTGATE_MAX_FINDINGS', '0'],
    ['TRUSTGATE_ALLOWED_ORIGINS', 'https://ui.example.com/path'],
    ['TRUSTGATE_ALLOWED_ORIGINS', 'ui.example.com'],
    ['TRUSTGATE_ALLOWED_ORIGINS', '*'],
    ['TRUSTGATE_ANSWER_BUFFER_BYTES', '1000'],
    ['TRUSTGATE_WORKER_WATCHDOG_MS', '1000'],
    ['TRUSTGATE_WORKER_WATCHDOG_MS', 'soon'],
    ['TRUSTGATE_REQUEST_TIMEOUT_MS', 'soon'],
    ['TRUSTGATE_TOKEN', 'has space'],
    ['HOST', 'not a host!'],
    ['TRUSTGATE_WORKERS', '0'],
    ['TRUSTGATE_WORKERS', '65'],
    ['TRUSTGATE_WORKERS', 'all'],
    ['TRUSTGATE_WORKERS', '2.5'],
    ['TRUSTGATE_DIALECTS', 'ifc,github'],
    ['TRUSTGATE_DIALECTS', 'IFC'],
    ['TRUSTGATE_DIALECTS', 'ifc,,fides'],
    ['TRUSTGATE_DIALECTS', ' '],
  ])('%s=%s stops start-up with a message naming the setting', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('reads every setting', () => {
    const c = loadConfig({
      PORT: '9090',
      HOST: '0.0.0.0',
      TRUSTGATE_POLICY_DIR: '/etc/trustgate',
      TRUSTGATE_MODE: 'warn',
      TRUSTGATE_TOKEN: 's3cret',
      TRUSTGATE_BODY_LIMIT: '2048',
      LOG_LEVEL: 'debug',
      TRUSTGATE_WORKERS: '3',
      TRUSTGATE_MAX_VALIDATION_FINDINGS: '50',
      TRUSTGATE_MAX_FINDINGS: '20',
      TRUSTGATE_ALLOWED_ORIGINS: 'https://UI.example.com, http://127.0.0.1:3000',
      TRUSTGATE_ANSWER_BUFFER_BYTES: '2097152',
      TRUSTGATE_WORKER_WATCHDOG_MS: '60000',
      TRUSTGATE_DIALECTS: 'fides, trust-annotations',
    });
    expect(loadConfig({ TRUSTGATE_WORKER_WATCHDOG_MS: '0' }).workerWatchdogMs).toBe(0);
    expect(loadConfig({ TRUSTGATE_WORKERS: 'auto' }).workers).toBe('auto');
    expect(c).toMatchObject({
      workers: 3,
      port: 9090,
      host: '0.0.0.0',
      policyDir: '/etc/trustgate',
      modeOverride: 'warn',
      token: 's3cret',
      bodyLimit: 2048,
      logLevel: 'debug',
      maxValidationFindings: 50,
      maxFindings: 20,
      allowedOrigins: ['https://ui.example.com', 'http://127.0.0.1:3000'],
      answerBufferBytes: 2097152,
      workerWatchdogMs: 60000,
      dialects: ['fides', 'trust-annotations'],
    });
  });

  it('names the dialects it knows when TRUSTGATE_DIALECTS lists another', () => {
    expect(() => loadConfig({ TRUSTGATE_DIALECTS: 'ifc,github' })).toThrow('TRUSTGATE_DIALECTS names an unknown dialect "github"; known: trust-annotations, ifc, fides');
    expect(Object.isFrozen(loadConfig({ TRUSTGATE_DIALECTS: 'ifc' }).dialects)).toBe(true);
  });
});
