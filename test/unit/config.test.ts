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
      sessionStore: 'memory',
      sessionTtlSeconds: 86400,
      maxSessions: 10000,
      maxPins: 10000,
      proxyPollUs: 1000,
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
    ['TRUSTGATE_MAX_INFLIGHT_BYTES', '1000'],
    ['TRUSTGATE_MAX_INFLIGHT_BYTES', '32MiB'],
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
    ['TRUSTGATE_SESSION_STORE', 'memcached://x'],
    ['TRUSTGATE_SESSION_STORE', 'redis://'],
    ['TRUSTGATE_SESSION_STORE', 'redis://h:6379/x'],
    ['TRUSTGATE_SESSION_STORE', 'Memory'],
    ['TRUSTGATE_SESSION_TTL', '0'],
    ['TRUSTGATE_SESSION_TTL', '1d'],
    ['TRUSTGATE_MAX_SESSIONS', '0'],
    ['TRUSTGATE_MAX_PINS', '-5'],
    ['TRUSTGATE_PROXY_POLL_US', '-1'],
    ['TRUSTGATE_PROXY_POLL_US', '10001'],
    ['TRUSTGATE_PROXY_POLL_US', '50us'],
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
      TRUSTGATE_MAX_INFLIGHT_BYTES: '8388608',
      TRUSTGATE_WORKER_WATCHDOG_MS: '60000',
      TRUSTGATE_DIALECTS: 'fides, trust-annotations',
      TRUSTGATE_PROXY_POLL_US: '250',
    });
    expect(loadConfig({ TRUSTGATE_PROXY_POLL_US: '0' }).proxyPollUs).toBe(0);
    expect(loadConfig({}).maxInflightBytes).toBe(33_554_432);
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
      maxInflightBytes: 8388608,
      workerWatchdogMs: 60000,
      dialects: ['fides', 'trust-annotations'],
      proxyPollUs: 250,
    });
  });

  it('names the dialects it knows when TRUSTGATE_DIALECTS lists another', () => {
    expect(() => loadConfig({ TRUSTGATE_DIALECTS: 'ifc,github' })).toThrow('TRUSTGATE_DIALECTS names an unknown dialect "github"; known: trust-annotations, ifc, fides');
    expect(Object.isFrozen(loadConfig({ TRUSTGATE_DIALECTS: 'ifc' }).dialects)).toBe(true);
  });

  it('reads the session settings; a bad store URL is refused without echoing it (it may hold a password)', () => {
    const c = loadConfig({ TRUSTGATE_SESSION_STORE: 'redis://u:p@redis.internal:6380/2', TRUSTGATE_SESSION_TTL: '60', TRUSTGATE_MAX_SESSIONS: '5', TRUSTGATE_MAX_PINS: '7' });
    expect(c).toMatchObject({ sessionStore: 'redis://u:p@redis.internal:6380/2', sessionTtlSeconds: 60, maxSessions: 5, maxPins: 7 });
    expect(loadConfig({ TRUSTGATE_SESSION_STORE: 'rediss://h' }).sessionStore).toBe('rediss://h');
    expect(loadConfig({ TRUSTGATE_SESSION_STORE: 'memory' }).sessionStore).toBe('memory');
    expect(() => loadConfig({ TRUSTGATE_SESSION_STORE: 'http://user:hunter2@h' })).toThrow(/^(?!.*hunter2).*TRUSTGATE_SESSION_STORE/);
  });
});

describe('session store settings (contract sections 1 and 12)', () => {
  it('defaults to the memory store, sessions living a day', () => {
    expect(loadConfig({})).toMatchObject({ sessionStore: 'memory', sessionTtlSeconds: 86400, maxSessions: 10000, maxPins: 10000 });
  });

  it('takes a redis:// URL', () => {
    const c = loadConfig({ TRUSTGATE_SESSION_STORE: 'redis://u:p@cache:6380/2', TRUSTGATE_SESSION_TTL: '60', TRUSTGATE_MAX_SESSIONS: '10' });
    expect(c).toMatchObject({ sessionStore: 'redis://u:p@cache:6380/2', sessionTtlSeconds: 60, maxSessions: 10 });
  });

  it.each([
    ['TRUSTGATE_SESSION_STORE', 'memcached://cache'],
    ['TRUSTGATE_SESSION_STORE', 'Memory'],
    ['TRUSTGATE_SESSION_STORE', 'redis://cache:6379/zero'],
    ['TRUSTGATE_SESSION_STORE', 'redis://u:%zz@cache:6379'],
    ['TRUSTGATE_SESSION_TTL', '0'],
    ['TRUSTGATE_SESSION_TTL', '1d'],
    ['TRUSTGATE_MAX_SESSIONS', '0'],
  ])('%s=%s stops start-up with a message naming the setting', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('a refused store URL is not repeated (it may hold a password)', () => {
    expect(() => loadConfig({ TRUSTGATE_SESSION_STORE: 'redis://u:hunter2@cache/x' })).toThrow(ConfigError);
    try {
      loadConfig({ TRUSTGATE_SESSION_STORE: 'redis://u:hunter2@cache/x' });
    } catch (err) {
      expect((err as Error).message).not.toContain('hunter2');
    }
  });
});
