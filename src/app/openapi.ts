/** The OpenAPI document as YAML, built from the same app the server runs. */
import { buildApp } from './app.js';
import { loadConfig } from '../config.js';
import pino from 'pino';
import { PolicyStore } from '../policy/reload.js';

export async function renderOpenApiYaml(): Promise<string> {
  const config = loadConfig({});
  const app = await buildApp({ config, store: new PolicyStore(config.policyDir), logger: pino({ level: 'silent' }) });
  await app.ready();
  const yaml = app.swagger({ yaml: true });
  await app.close();
  return yaml;
}
